"""topictool evaluate: document-completion perplexity of a model on test documents, or the
left-to-right estimate of the likelihood of whole test documents (--method left-to-right)."""

import click

from .common import COUNT, POSITIVE, SEED, THREADS, emit_json, engine_option, json_option, print_table, vocab_option

#: the options of one evaluation method each: refused with one line when given to the other
COMPLETION_ONLY = ("holdout", "burn_in", "samples")
LEFT_TO_RIGHT_ONLY = ("particles", "resample", "weighted")


@click.command("evaluate", short_help="Held-out perplexity of a model on test documents.")
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
    type=click.Choice(["gibbs", "vb", "left-to-right"]),
    default=None,
    help="Document completion with a collapsed Gibbs fold-in (as hca) or the variational fixed point, or "
    "left-to-right: the likelihood of whole documents (Wallach et al. 2009, as Mallet's evaluate-topics). "
    "[default: document completion with the model's own fold-in, as its snapshot records it (what "
    "train --test used); gibbs for imported models]",
)
@click.option(
    "--particles",
    default=10,
    show_default=True,
    type=POSITIVE,
    help="Particles of --method left-to-right (Mallet's default is 10).",
)
@click.option(
    "--resample",
    is_flag=True,
    help="--method left-to-right: before each position, resample the topics of the earlier tokens "
    "(Wallach et al.'s Algorithm 3; O(N^2) per document). Without it, as Mallet's default, they are never "
    "revisited.",
)
@click.option(
    "--weighted",
    is_flag=True,
    help="--method left-to-right: weight each particle by its own whole-document likelihood (sequential "
    "importance sampling): unbiased, and converges to the exact likelihood as --particles grows, where "
    "Mallet's position-by-position average (the default, and --resample) keeps a small bias.",
)
@click.option("--seed", default=1, show_default=True, type=SEED, help="Seed of the hold-out split and the sampler.")
@click.option(
    "--threads", default=1, show_default=True, type=THREADS, help="Threads (the result does not depend on it)."
)
@engine_option(
    "mpi: share the test documents out among the ranks of `mpiexec -n P topictool evaluate ...` (document "
    "completion; the same figure as one process)."
)
@vocab_option("Vocabulary of TEST when it is an LdaC/UCI file (default: found beside it).")
@click.option(
    "--allow-oov",
    is_flag=True,
    help="Score a TEST whose words the model lacks: such tokens are dropped and counted (without "
    "it they are an error).",
)
@json_option
@click.pass_context
def command(ctx, **options):
    """Perplexity of MODEL (a run directory or a snapshot .npz) on TEST (a prepared corpus
    directory, whose test split is used, or an LdaC/UCI file) by document completion:
    theta is folded in on the observed tokens of each test document with phi fixed, and
    the held-out tokens are scored. With --method left-to-right, the log-likelihood of whole
    test documents, log p(w | phi, alpha), estimated with --particles particles (Wallach et
    al. 2009, Algorithm 3 with --resample; Mallet's evaluate-topics). Words of TEST the model
    lacks are an error unless --allow-oov (then they are dropped and counted)."""
    from ..mpi import on_ranks, quiet_ranks

    engine, method = options.pop("engine"), options["method"]
    as_json = options.pop("as_json")
    with quiet_ranks(engine):
        _check_options(ctx, method)
        if engine == "mpi" and method == "left-to-right":
            from ..errors import InputError

            raise InputError("--engine mpi applies to document completion, not --method left-to-right")
        result = on_ranks(engine, options["threads"], lambda e: _evaluate(e, **options))
    if result is not None:
        _show(options["model"], options["test"], as_json, *result)


def _evaluate(
    engine,
    *,
    model,
    test,
    holdout,
    burn_in,
    samples,
    method,
    particles,
    resample,
    weighted,
    seed,
    threads,
    vocab,
    allow_oov,
):
    """(title, result, rows, details, scored) of the evaluation, on every rank (one, or MPI's)."""
    from ..corpus import load_corpus
    from ..snapshot import load_model

    snapshot = engine.agree(load_model, model)
    corpus = engine.agree(load_corpus, test, part="test", vocab=vocab)
    common = dict(seed=seed, threads=threads, allow_oov=allow_oov)
    if method == "left-to-right":
        from ..evaluate.left_to_right import left_to_right

        result = left_to_right(snapshot, corpus, particles=particles, resample=resample, weighted=weighted, **common)
        how = (
            "weighted by their likelihood (importance sampling)"
            if weighted
            else "with resampling (Wallach et al.)"
            if resample
            else "without resampling (Mallet's default)"
        )
        title = "left-to-right"
        rows = [("log-likelihood", result["log_likelihood"]), ("perplexity", result["perplexity"])]
        rows.append(("tokens", result["tokens"]))
        scored = result["tokens"]
        details = [("particles", f"{particles:,}, {how}"), ("seed", result["seed"])]
    else:
        from ..evaluate.completion import document_completion

        if method is None:
            recorded = snapshot.meta.get("eval_method")
            method = recorded if recorded in ("gibbs", "vb") else "gibbs"
        ranks = {"engine": engine} if engine.size > 1 else {}
        result = document_completion(
            snapshot, corpus, holdout=holdout, burn_in=burn_in, samples=samples, method=method, **common, **ranks
        )
        title = "document completion"
        rows = [("perplexity", result["perplexity"])]
        rows += [("held-out tokens", result["heldout_tokens"]), ("observed tokens", result["observed_tokens"])]
        scored = result["observed_tokens"] + result["heldout_tokens"]
        fold = f"gibbs, {burn_in} burn-in + {samples} samples" if method == "gibbs" else "vb"
        details = [("hold-out", result["holdout"]), ("fold-in", fold)]
        if engine.size > 1:
            details.append(("MPI ranks", engine.size))
    return title, result, rows, details, scored


def _show(model, test, as_json, title, result, rows, details, scored):
    result["model"] = str(model)
    result["test"] = str(test)
    if as_json:
        emit_json(result)
        return
    rows.insert(1, ("log-likelihood per token", result["log_likelihood_per_token"]))
    rows.append(("documents", f"{result['documents']:,} of {result['documents_total']:,}"))
    if result["oov_tokens"]:
        share = 100.0 * result["oov_tokens"] / max(result["oov_tokens"] + scored, 1)
        rows.append(("tokens outside the model's vocabulary (dropped)", f"{result['oov_tokens']:,} ({share:.1f}%)"))
    rows += [*details, ("seconds", round(result["seconds"], 3))]
    print_table(f"{title}: {model} on {test}", ["", ("", "right")], rows, show_header=False)


def _check_options(ctx, method):
    """One line (exit 2) before any work for an option of the other evaluation method."""
    from click.core import ParameterSource

    from ..errors import InputError

    given = [n for n in ctx.params if ctx.get_parameter_source(n) == ParameterSource.COMMANDLINE]
    wrong = COMPLETION_ONLY if method == "left-to-right" else LEFT_TO_RIGHT_ONLY
    bad = ["--" + n.replace("_", "-") for n in given if n in wrong]
    if bad:
        which = "--method left-to-right" if method == "left-to-right" else "document completion"
        hint = "" if method == "left-to-right" else " (add --method left-to-right)"
        raise InputError(f"{', '.join(bad)} does not apply to {which}{hint}")
