"""Throw ~860 bad inputs at every command, each in its own process; report any exit code
other than 0 and 2, any traceback, any stderr of more than one line with exit 2, any bare
NaN/Infinity in JSON output, any timeout. A sweep for regressions of the safety issue;
tests/test_safety.py holds the classes it found, each with its files checked byte for byte.

    python scripts/adversarial.py        (about 15 minutes on 2 cores)
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TT = [sys.executable, "-m", "topictool"]
work = Path(tempfile.mkdtemp(prefix="adv-"))
os.chdir(work)


def sh(*args, timeout=300):
    p = subprocess.run(TT + [str(a) for a in args], capture_output=True, text=True, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


assert (
    sh(
        "synth",
        "lda",
        "-o",
        "c",
        "-K",
        "3",
        "-V",
        "50",
        "--documents",
        "40",
        "--test-documents",
        "10",
        "--format",
        "both",
    )[0]
    == 0
)
assert sh("train", "c", "-m", "lda-gibbs", "-K", "3", "-n", "3", "-o", "r")[0] == 0
assert sh("snapshot", "r", "-o", "m.npz")[0] == 0
Path("t").mkdir()
for i in range(5):
    Path(f"t/{i}.txt").write_text("alpha beta gamma delta " * (i + 1))
Path("bin").write_bytes(bytes(range(256)) * 20)
Path("empty").write_text("")
Path("afile").write_text("x\n")
Path("neg.ldac").write_text("2 0:3 1:-1\n")
Path("neg.vocab").write_text("a\nb\n")
Path("ws.ldac").write_text("   \n\n")
Path("ws.vocab").write_text("a\n")
Path("huge.ldac").write_text("1 0:99999999999999999999\n")
Path("huge.vocab").write_text("a\n")
Path("nul.txt").write_bytes(b"a\x00b\x00c\n" * 10)

weird = [
    "bin",
    "empty",
    "afile",
    "nope",
    ".",
    "..",
    "/",
    "/dev/null",
    "t",
    "c",
    "r",
    "m.npz",
    "neg.ldac",
    "ws.ldac",
    "huge.ldac",
    "nul.txt",
    "c/train.ldac",
    "c/docword.train.txt",
    "c/vocab.txt",
    "/proc/self/status",
]
nums = ["-1", "0", "1e308", "nan", "inf", "abc", "", "99999999999999999999", "1.5", "-0"]

cases = []
for src in weird:
    cases.append(["prepare", src, "-o", "p-out", "--min-count", "1"])
    cases.append(["train", src, "-m", "lda-gibbs", "-K", "2", "-n", "1", "-o", "t-out"])
    cases.append(["evaluate", "m.npz", src])
    cases.append(["evaluate", src, "c"])
    cases.append(["topics", src])
    cases.append(["info", src])
    cases.append(["pmi", "m.npz", "--reference", src, "--vocab", "c"])
    cases.append(["cooc", src, "--vocab", "c", "-o", "ref.npz"])
    cases.append(["cooc", "t", "--vocab", src, "-o", "ref.npz"])
    cases.append(["snapshot", src, "-o", "s.npz"])
    cases.append(["snapshot", "import", "--from", "mallet", src, "-o", "s.npz"])
    cases.append(["snapshot", "import", "--from", "hca", src, "-o", "s.npz"])
    cases.append(["snapshot", "import", "--from", "text", src, "-o", "s.npz"])
    cases.append(["train", "--resume", src])
    cases.append(["prepare", "t", "-o", "p-out", "--vocab", src])
    cases.append(["prepare", "t", "-o", "p-out", "--stopwords", src])
    cases.append(["train", "c", "-m", "lda-gibbs", "-n", "1", "-o", "t-out", "--config", src])
    cases.append(["train", "c", "-m", "lda-gibbs", "-n", "1", "-o", "t-out", "--test", src])
    cases.append(["pmi", "--topics", src, "--reference", "ref-none.npz"])
for n in nums:
    cases.append(["train", "c", "-m", "lda-gibbs", "-K", n, "-n", "1", "-o", "t-out"])
    cases.append(["train", "c", "-m", "lda-gibbs", "-n", n, "-o", "t-out"])
    cases.append(["train", "c", "-m", "lda-gibbs", "-n", "1", "--seed", n, "-o", "t-out"])
    cases.append(["train", "c", "-m", "lda-gibbs", "-n", "1", "--threads", n, "-o", "t-out"])
    cases.append(["train", "c", "-m", "lda-gibbs", "-n", "1", "--checkpoint-every", n, "-o", "t-out"])
    cases.append(["evaluate", "m.npz", "c", "--samples", n])
    cases.append(["evaluate", "m.npz", "c", "--holdout", f"every:{n}"])
    cases.append(["evaluate", "m.npz", "c", "--holdout", f"fraction:{n}"])
    cases.append(["evaluate", "m.npz", "c", "--seed", n])
    cases.append(["topics", "m.npz", "--top", n])
    cases.append(["prepare", "t", "-o", "p-out", "--test-fraction", n])
    cases.append(["prepare", "t", "-o", "p-out", "--max-df", n])
    cases.append(["prepare", "t", "-o", "p-out", "--seed", n])
    cases.append(["synth", "lda", "-o", "s-out", "--alpha", n])
    cases.append(["synth", "lda", "-o", "s-out", "-K", n])
    cases.append(["synth", "bars", "-o", "s-out", "--side", n])
    cases.append(["synth", "hdp", "-o", "s-out", "--gamma", n])
    cases.append(["synth", "lida", "-o", "s-out", "--eta", n])
    cases.append(["cooc", "t", "--vocab", "c", "-o", "ref.npz", "--window", n])
    cases.append(["cooc", "t", "--vocab", "c", "-o", "ref.npz", "--memory", n])
    for model in [
        "lda-gibbs",
        "hdp-gibbs",
        "nplda-gibbs",
        "lida-gibbs",
        "lda-svi",
        "lda-scvb0",
        "hdp-pcvb0",
        "hdp-pcsvb0",
        "hdp-online",
        "hdp-online-sm",
        "hdp-batch",
    ]:
        for opt in {
            "lda-gibbs": ["optimize_interval", "alpha_vector"],
            "hdp-gibbs": ["sample_hyper_every", "a_theta", "fix"],
            "nplda-gibbs": ["a_phi", "b_phi"],
            "lida-gibbs": ["initial_topics", "variant"],
            "lda-svi": ["tau0", "kappa", "minibatch", "max_local_iters"],
            "lda-scvb0": ["kappa", "burn_in", "tau_phi"],
            "hdp-pcvb0": ["init"],
            "hdp-pcsvb0": ["kappa", "minibatch", "s_c"],
            "hdp-online": ["kappa", "tau", "local_iterations"],
            "hdp-online-sm": ["max_splits", "split_init", "max_topics"],
            "hdp-batch": ["global_update", "hyper_burn_in"],
        }[model]:
            cases.append(["train", "c", "-m", model, "-K", "3", "-n", "1", "--set", f"{opt}={n}", "-o", "t-out"])

bad = []
print(len(cases), "cases", file=sys.stderr)
for args in cases:
    for d in ("t-out", "p-out", "s-out", "ref.npz", "s.npz", "ref.npz.state"):
        p = Path(d)
        if p.is_dir():
            shutil.rmtree(p)
        elif p.exists():
            p.unlink()
    try:
        code, out, err = sh(*args, "--json") if args[0] in ("evaluate", "topics", "info") else sh(*args)
    except subprocess.TimeoutExpired:
        bad.append((args, "timeout", ""))
        continue
    lines = err.strip().splitlines()
    if code not in (0, 2) or "Traceback" in err or (code == 2 and len(lines) != 1):
        bad.append((args, code, err.strip()[-300:]))
    if code == 0 and out.strip().startswith("{"):
        try:
            json.loads(out, parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))
        except ValueError as e:
            bad.append((args, "json", str(e)))
for b in bad:
    print(b)
print(f"{len(cases)} cases, {len(bad)} bad", file=sys.stderr)
