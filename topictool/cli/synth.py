"""topictool synth: synthetic corpora with known truth (prepared directory + truth.npz)."""

import functools

import click

from .common import COUNT, POSITIVE, SEED, emit_json, export_format_option, force_option, json_option, options


@click.group("synth", short_help="Generate synthetic corpora with known truth (bars, lda, hdp, lida).")
def command():
    """Generate a synthetic corpus with a known truth: a prepared corpus directory
    plus truth.npz (true phi, theta, alpha)."""


def _common(f):
    @click.option("-o", "--output", "out", required=True, help="Corpus directory to create.")
    @click.option("--seed", default=1, show_default=True, type=SEED, help="Seed of everything drawn.")
    @export_format_option
    @force_option
    @json_option
    @functools.wraps(f)
    def wrapper(**kw):
        return f(**kw)

    return wrapper


def _sizes(documents, test_documents, length, length_help="Words per document."):
    """--documents, --test-documents and --length with a generator's defaults."""
    return options(
        click.option("--documents", default=documents, show_default=True, type=POSITIVE, help="Training documents."),
        click.option("--test-documents", default=test_documents, show_default=True, type=COUNT, help="Test documents."),
        click.option("--length", default=length, show_default=True, type=POSITIVE, help=length_help),
    )


def _shape(topics, vocab_size, topics_help="Number of topics."):
    """-K/--topics and -V/--vocab-size with a generator's defaults."""
    return options(
        click.option("-K", "--topics", default=topics, show_default=True, type=POSITIVE, help=topics_help),
        click.option("-V", "--vocab-size", default=vocab_size, show_default=True, type=POSITIVE, help="Words."),
    )


def _real(name, default, help, *names):
    """A number option (``names``: old spellings and the parameter's name)."""
    return click.option(name, *names, default=default, show_default=True, type=float, help=help)


def _write(name, params, out, fmt, force, as_json, generate):
    """Check the output, generate (``generate(**params)``), write the corpus directory with truth.npz."""
    from .. import store
    from ..corpus.prepare import save_corpus_dir
    from .prepare import show_manifest

    store.check_output_dir(out, force, "corpus")
    train, test, truth = generate(**params)

    def write_truth(stage, manifest):
        store.write_npz(stage / "truth.npz", **truth)
        manifest["synth"] = {"generator": name, **params}

    manifest = save_corpus_dir(out, train, test, extra={"truth": write_truth}, force=force, formats=fmt)
    manifest["output"] = str(out)
    if as_json:
        emit_json(manifest)
    else:
        show_manifest(manifest, f"synth {name} -> {out}")


@command.command("bars")
@_sizes(2000, 200, 250)
@_real("--alpha", 1.0, "Dirichlet parameter of the mixtures.")
@click.option("--side", default=10, show_default=True, type=POSITIVE, help="Grid side: side^2 words, 2*side topics.")
@_common
def bars_cmd(out, fmt, force, as_json, **params):
    """Griffiths-Steyvers bars: a 10x10 grid (V=100) and 20 topics, one per row and column."""
    from ..synth import bars

    _write("bars", params, out, fmt, force, as_json, bars)


@command.command("lda")
@_shape(10, 500)
@_sizes(1000, 100, 100, "Words per document (mean if --poisson-length).")
@click.option("--alpha", default="0.1", show_default=True, help="Symmetric value, or K comma-separated values.")
@_real("--beta", 0.01, "Dirichlet parameter of the topics.")
@click.option("--poisson-length", is_flag=True, help="Draw document lengths from Poisson(--length).")
@_common
def lda_cmd(out, fmt, force, as_json, **params):
    """The LDA generative process."""
    from ..synth import lda

    _write("lda", params, out, fmt, force, as_json, lda)


@command.command("hdp")
@click.option(
    "-T", "--truncation", default=50, show_default=True, type=POSITIVE, help="Number of stick-breaking topics."
)
@_real("--gamma", 5.0, "GEM concentration of the global weights.")
@_real("--alpha", 1.0, "Document-level DP concentration.")
@_real("--beta", 0.05, "Dirichlet parameter of the topics.", "--eta", "beta")
@click.option("-V", "--vocab-size", default=500, show_default=True, type=POSITIVE, help="Words.")
@_sizes(1000, 100, 100)
@_common
def hdp_cmd(out, fmt, force, as_json, **params):
    """Truncated HDP: GEM(gamma) global weights, documents DP(alpha) over them."""
    from ..synth import hdp

    _write("hdp", params, out, fmt, force, as_json, hdp)


@command.command("lida")
@_shape(20, 500)
@_sizes(1000, 100, 100)
@_real("--alpha", 1.0, "Dirichlet parameter of each active topic.")
@_real("--beta", 0.5, "Dirichlet parameter of each active word.")
# the names of train's lida-gibbs options; the paper's letters (the old names) still work
@_real("--theta-bar-mass", 5.0, "IBP mass over documents: about this many active topics per document.", "--eta", "eta")
@_real("--theta-bar-concentration", 1.0, "IBP concentration over documents.", "--delta", "delta")
@_real("--phi-bar-mass", 50.0, "IBP mass over topics: about this many active words per topic.", "--gamma", "gamma")
@_real("--phi-bar-concentration", 1.0, "IBP concentration over topics.", "--lambda", "lam")
@_common
def lida_cmd(out, fmt, force, as_json, **params):
    """The LIDA generative process: sparse topic proportions (theta_bar) and sparse topics (phi_bar).
    truth.npz also holds theta_bar, phi_bar (K x V) and their densities."""
    from ..models.lida.synth import lida

    _write("lida", params, out, fmt, force, as_json, lida)
