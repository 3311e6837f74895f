"""topictool evaluate: document-completion perplexity of a model on test documents."""

import click

from .common import COUNT, POSITIVE, SEED, THREADS, emit_json, json_option, print_table, vocab_option


@click.command("evaluate", short_help="Document-completion perplexity of a model on test documents.")
@click.argument("model")
@click.argument("test")
@click.option(
    "--holdout",
    default="every:5",
    show_default=True,
    help="Which tokens of each test document are held out: every:N (every N-th token of a "
    "seeded random order) or fraction:F (a random F of them).",
)
@click.option(
    "--burn-in", default=10, show_default=True, type=COUNT, help="Gibbs fold-in sweeps discarded before sampling theta."
)
@click.option(
    "--samples",
    default=40,
    show_default=True,
    type=POSITIVE,
    help="Gibbs fold-in sweeps whose theta estimates are averaged.",
)
@click.option(
    "--method",
    type=click.Choice(["gibbs", "vb"]),
    default=None,
    help="Fold-in: collapsed Gibbs (as hca) or the variational fixed point. [default: the model's own, as its "
    "snapshot records it (what train --test used); gibbs for imported models]",
)
@click.option("--seed", default=1, show_default=True, type=SEED, help="Seed of the hold-out split and the sampler.")
@click.option(
    "--threads", default=1, show_default=True, type=THREADS, help="Threads (the result does not depend on it)."
)
@vocab_option("Vocabulary of TEST when it is an LdaC/UCI file (default: found beside it).")
@click.option(
    "--allow-oov",
    is_flag=True,
    help="Score a TEST whose words the model lacks: such tokens are dropped and counted (without "
    "it they are an error).",
)
@json_option
def command(model, test, holdout, burn_in, samples, method, seed, threads, vocab, allow_oov, as_json):
    """Perplexity of MODEL (a run directory or a snapshot .npz) on TEST (a prepared corpus
    directory, whose test split is used, or an LdaC/UCI file) by document completion:
    theta is folded in on the observed tokens of each test document with phi fixed, and
    the held-out tokens are scored. Words of TEST the model lacks are an error unless
    --allow-oov (then they are dropped and counted)."""
    from ..corpus import load_corpus
    from ..evaluate.completion import document_completion
    from ..snapshot import load_model

    snapshot = load_model(model)
    if method is None:
        method = snapshot.meta.get("eval_method") if snapshot.meta.get("eval_method") in ("gibbs", "vb") else "gibbs"
    corpus = load_corpus(test, part="test", vocab=vocab)
    result = document_completion(
        snapshot,
        corpus,
        holdout=holdout,
        burn_in=burn_in,
        samples=samples,
        method=method,
        seed=seed,
        threads=threads,
        allow_oov=allow_oov,
    )
    result["model"] = str(model)
    result["test"] = str(test)
    if as_json:
        emit_json(result)
        return
    rows = [
        ("perplexity", result["perplexity"]),
        ("log-likelihood per token", result["log_likelihood_per_token"]),
        ("held-out tokens", result["heldout_tokens"]),
        ("observed tokens", result["observed_tokens"]),
        ("documents", f"{result['documents']:,} of {result['documents_total']:,}"),
    ]
    if result["oov_tokens"]:
        share = (
            100.0
            * result["oov_tokens"]
            / max(result["oov_tokens"] + result["observed_tokens"] + result["heldout_tokens"], 1)
        )
        rows.append(("tokens outside the model's vocabulary (dropped)", f"{result['oov_tokens']:,} ({share:.1f}%)"))
    fold = f"gibbs, {burn_in} burn-in + {samples} samples" if method == "gibbs" else "vb"
    rows += [("hold-out", result["holdout"]), ("fold-in", fold), ("seconds", round(result["seconds"], 3))]
    print_table(f"document completion: {model} on {test}", ["", ("", "right")], rows, show_header=False)
