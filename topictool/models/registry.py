"""Model name -> class. The one place a model is made known to the tool.

Entries are import paths so that ``topictool --help`` does not import (and
compile) every model's kernels. A new family is one package under models/ and
one line here; code outside the tool (a test, a plug-in) calls register().
"""

import importlib

from ..errors import InputError

MODELS = {
    "lda-gibbs": "topictool.models.lda_gibbs.model:LdaGibbs",
    "lida-gibbs": "topictool.models.lida.model:LidaGibbs",
    "hdp-gibbs": "topictool.models.hca.hdp:HdpGibbs",
    "nplda-gibbs": "topictool.models.hca.nplda:NpldaGibbs",
    "lda-svi": "topictool.models.variational.svi:LdaSvi",
    "lda-scvb0": "topictool.models.variational.scvb0:LdaScvb0",
    "hdp-pcvb0": "topictool.models.variational.pcvb0:HdpPcvb0",
    "hdp-pcsvb0": "topictool.models.variational.pcsvb0:HdpPcsvb0",
    "hdp-online": "topictool.models.online_hdp.model:OnlineHdp",
    "hdp-online-sm": "topictool.models.online_hdp.model:OnlineHdpSplitMerge",
    "hdp-batch": "topictool.models.online_hdp.model:BatchHdp",
}


def names():
    return sorted(MODELS)


def register(name, target):
    """Make a model known as ``name``: ``target`` is a Model subclass or "module:Class"."""
    if name in MODELS:
        raise ValueError(f"model {name!r} is registered already")
    MODELS[name] = target


def get(name):
    try:
        target = MODELS[name]
    except KeyError:
        raise InputError(f"unknown model {name!r} (available: {', '.join(names())})") from None
    if not isinstance(target, str):
        return target
    module, cls = target.split(":")
    return getattr(importlib.import_module(module), cls)
