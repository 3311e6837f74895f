"""topictool train: fit a model, checkpointed; --resume continues exactly."""

import click

from .common import (
    COUNT,
    POSITIVE,
    SEED,
    THREADS,
    emit_json,
    engine_option,
    force_option,
    json_option,
    parse_key_values,
    print_table,
)


@click.command("train", short_help="Train a topic model (checkpointed; --resume continues exactly).")
@click.argument("corpus", required=False)
@click.option("-m", "--model", help="Model name (see --list-models).")
@click.option(
    "-K",
    "--topics",
    "K",
    type=POSITIVE,
    help="Number of topics (truncation level for non-parametric models). [default: 100]",
)
@click.option(
    "-n", "--iterations", type=COUNT, help="Iterations to run (with --resume: how many more). [default: 1000]"
)
@click.option("--seed", type=SEED, help="Random seed. [default: 1]")
@click.option("-o", "--output", "out", help="Run directory to create.")
@click.option(
    "--config", "config", type=click.Path(dir_okay=False), help="TOML file: model, K, iterations, seed, [options]."
)
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE", help="Set a model option (repeatable).")
@click.option("--threads", type=THREADS, help="Worker threads (per MPI rank with --engine mpi). [default: 1]")
@engine_option(
    "local: one process; mpi: the ranks of an MPI job started by `mpiexec -n P topictool train ...` or "
    "`srun topictool train ...`, each with --threads threads (needs the mpi extra; docs/cluster.md)."
)
@click.option("--test", help="Test corpus for periodic document-completion perplexity.")
@click.option("--eval-every", default=0, type=COUNT, help="Evaluate on --test every N iterations.")
@click.option("--holdout", default="every:5", show_default=True, help="Hold-out of test documents for --test.")
@click.option(
    "--eval-seed",
    type=SEED,
    default=1,
    show_default=True,
    help="Seed of the --test hold-out and fold-in (evaluate's --seed: the two give the same figure).",
)
@click.option(
    "--allow-oov",
    is_flag=True,
    help="Let --test hold words the training vocabulary lacks (they are dropped and counted).",
)
@click.option(
    "--checkpoint-every",
    default=50,
    show_default=True,
    type=COUNT,
    help="Checkpoint every N iterations (0: only at the end).",
)
@click.option("--keep-checkpoints", default=3, show_default=True, type=COUNT, help="Checkpoints kept (the newest).")
@click.option(
    "--log-every",
    default=10,
    show_default=True,
    type=COUNT,
    help="Log-likelihood and a progress line every N iterations (when not on a terminal).",
)
@click.option(
    "--show-topics",
    type=COUNT,
    help="Print the top words of every topic every N iterations (Mallet's --show-topics-interval).",
)
@click.option("--resume", "resume_run", type=click.Path(file_okay=False), help="Continue the run in this directory.")
@click.option("--debug-checks", is_flag=True, help="Verify count invariants after every iteration (slow).")
@click.option("--list-models", is_flag=True, help="List the models (what one -n step is, threads) and exit.")
@force_option
@json_option
def command(**options):
    """Train MODEL on CORPUS (a prepared directory, or an LdaC / UCI file) into the run
    directory OUTPUT: run.json, checkpoints/, model.npz (latest snapshot), metrics.jsonl.
    SIGTERM or Ctrl-C checkpoints and exits 0; `train --resume RUN [-n MORE]` continues."""
    from ..mpi import quiet_ranks

    with quiet_ranks(options["engine"]):
        _run(**options)


def _run(
    *,
    corpus,
    model,
    K,
    iterations,
    seed,
    out,
    config,
    sets,
    threads,
    test,
    eval_every,
    holdout,
    eval_seed,
    allow_oov,
    checkpoint_every,
    keep_checkpoints,
    log_every,
    show_topics,
    resume_run,
    debug_checks,
    list_models,
    engine,
    force,
    as_json,
):
    from .. import training
    from ..errors import InputError
    from ..models import registry
    from ..mpi import on_ranks

    if list_models:
        rows = []
        for name in registry.names():
            cls = registry.get(name)
            rows.append(
                dict(
                    name=name,
                    step_unit=cls.step_unit,
                    threads=cls.supports_threads,
                    mpi=cls.supports_mpi,
                    eval_method=cls.eval_method,
                )
            )
        if as_json:
            emit_json({"models": rows})
        else:
            yes = {True: "yes", False: "no"}
            table = [(r["name"], r["step_unit"], yes[r["threads"]], yes[r["mpi"]], r["eval_method"]) for r in rows]
            print_table(
                "models (-n counts steps)", ["model", "one step", "threads", "--engine mpi", "evaluated by"], table
            )
        return
    if resume_run:
        if corpus or model or out or config or sets or K is not None or seed is not None or test or force:
            raise InputError("--resume takes only the run directory, -n MORE, --threads, --engine and --show-topics")
        summary = on_ranks(
            engine,
            threads or 1,
            lambda e: training.resume(resume_run, more=iterations, threads=threads, show_topics=show_topics, engine=e),
        )
    else:
        cfg_top, cfg_opts = training.load_config(config) if config else ({}, {})
        model = model or cfg_top.get("model")
        if not corpus:
            raise InputError("missing CORPUS (or --resume RUN)")
        if not model:
            raise InputError("missing -m/--model (see --list-models)")
        if not out:
            raise InputError("missing -o/--output run directory")
        # precedence: the command line (-K, --set) over the config over the defaults
        options = dict(cfg_opts)
        given = parse_key_values(sets)
        options.update(given)
        set_K = options.pop("K", None) if "K" in given else None
        if K is not None and set_K is not None and str(K) != str(set_K).strip():
            raise InputError(f"-K {K} and --set K={set_K} disagree; give one")
        K = K if K is not None else set_K if set_K is not None else cfg_top.get("K", 100)
        try:
            K = int(K)
        except ValueError:
            raise InputError(f"-K {K!r}: expected an integer") from None
        if K < 1:
            raise InputError(f"-K must be at least 1, got {K}")
        options["K"] = K
        spec, _ = training.resolve_spec(
            corpus,
            model,
            iterations if iterations is not None else cfg_top.get("iterations", 1000),
            seed if seed is not None else cfg_top.get("seed", 1),
            threads if threads is not None else cfg_top.get("threads", 1),
            options,
            test=test,
            eval_every=eval_every,
            holdout=holdout,
            eval_seed=eval_seed,
            allow_oov=allow_oov,
            checkpoint_every=checkpoint_every,
            keep_checkpoints=keep_checkpoints,
            log_every=log_every,
            debug_checks=debug_checks,
            show_topics=show_topics or 0,
            engine=engine,
        )
        summary = on_ranks(engine, spec.threads, lambda e: training.train(spec, out, force=force, engine=e))
    if summary is None:  # an MPI rank other than 0: rank 0 reports
        return
    if as_json:
        emit_json(summary)
    else:
        last = summary.get("last", {})
        rows = [
            ("run", summary["run"]),
            ("model", summary["model"]),
            ("iterations", f"{summary['iterations_done']} / {summary['iterations_target']}"),
            ("seconds", summary["seconds_total"]),
        ]
        for key in ("tokens_per_s", "log_likelihood", "test_perplexity"):
            if key in last and last[key] is not None:
                rows.append((key.replace("_", " "), last[key]))
        if summary["stopped_by_signal"]:
            rows.append(("stopped", "by signal; checkpoint written (continue with --resume)"))
        print_table("train", ["", ("", "right")], rows, show_header=False)
