"""Fetch and prepare a public data set: python data_prep/fetch.py NAME [--download | --from FILE] -o OUT

OUT becomes the prepared corpus directory (Wikipedia: the directory of reference.npz);
work files go to OUT/../work/NAME, downloads to OUT/../downloads.

Examples:
    python data_prep/fetch.py kos --download -o data_prep/build/kos
    python data_prep/fetch.py reuters --from ~/reuters21578.tar.gz -o data_prep/build/reuters --title
    python data_prep/fetch.py 20news --download --remove footers,quotes -o data_prep/build/20news
    python data_prep/fetch.py wikipedia --from enwiki-latest-pages-articles.xml.bz2 \\
        --vocab data_prep/build/kos -o data_prep/build/wikipedia
    python data_prep/fetch.py kos --download -o OUT -- --max-df 0.5   # more `topictool prepare` options

Exit codes: 0 success; 1 a download or unexpected failure (running again resumes a
download); 2 bad input or usage (one line on stderr); a failed topictool command's own code.
"""

import argparse
import shlex
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the data_prep package importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from data_prep import recipes  # noqa: E402
from data_prep.download import DownloadError  # noqa: E402
from topictool.errors import TopicToolError  # noqa: E402

# options used by some recipes only: the recipe must list them (Recipe.options)
SPECIFIC = (
    "split",
    "title",
    "require_topic",
    "remove",
    "vocab",
    "window",
    "workers",
    "dump",
    "test_fraction",
    "stopwords",
    "min_count",
    "token_pattern",
    "format",
    "seed",
)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, like topictool's usage errors
        self.exit(2, f"fetch.py: error: {message} (see 'fetch.py --help')\n")


def parser():
    p = _Parser(
        prog="fetch.py",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="data sets:\n" + "\n".join(f"  {n:18} {s}" for n, s, _ in recipes.describe()),
    )
    p.add_argument("name", metavar="NAME", nargs="?", help="data set (see below; --list for URLs)")
    p.add_argument(
        "-o",
        "--output",
        dest="out",
        help="the prepared corpus directory to make (Wikipedia: the directory of reference.npz)",
    )
    get = p.add_mutually_exclusive_group()
    get.add_argument("--download", action="store_true", help="download the published file(s) (resumable)")
    get.add_argument(
        "--from",
        dest="sources",
        action="append",
        default=[],
        metavar="FILE",
        help="an already downloaded file (or unpacked directory); Wikipedia: repeat for split dumps",
    )
    p.add_argument("--downloads", metavar="DIR", help="where downloads are kept [default: OUT/../downloads]")
    p.add_argument("--work", metavar="DIR", help="work files (extracted text, split parts) [default: OUT/../work/NAME]")
    p.add_argument(
        "--mirror",
        metavar="URL",
        help="fetch URL/<file name> instead of the recorded address "
        "(Wikipedia: the dumps directory, URL/<date>/<file>)",
    )
    p.add_argument("--sha256", metavar="HEX", help="expected sha256 of the input (overrides the recorded one)")
    p.add_argument("--no-verify", dest="verify", action="store_false", help="do not check recorded checksums")
    p.add_argument("--force", action="store_true", help="replace an existing prepared corpus / reference")
    p.add_argument(
        "--topictool",
        metavar="CMD",
        help="topictool program [default: $TOPICTOOL, else the topictool beside this Python]",
    )
    p.add_argument("--list", action="store_true", help="list the data sets with their source URLs and exit")
    g = p.add_argument_group("topictool prepare (defaults: the papers' preprocessing)")
    g.add_argument("--min-count", type=int, help="drop words seen fewer times [5]")
    g.add_argument(
        "--stopwords",
        help="english, none or FILE [english for text, none for UCI and AP, "
        "whose vocabularies are already stop-worded]",
    )
    g.add_argument("--token-pattern", help="token regular expression, e.g. '[^\\W\\d_]+' for purely alphabetic")
    g.add_argument("--test-fraction", type=float, help="held-out documents, for sets without their own split [0.2]")
    g.add_argument("--seed", type=int, help="seed of that split [1]")
    g.add_argument("--format", choices=["none", "ldac", "uci", "both"], help="also export LdaC / UCI files")
    g = p.add_argument_group("reuters")
    g.add_argument("--split", choices=sorted(recipes.REUTERS_SPLITS), help="[modapte]")
    g.add_argument("--title", action="store_true", default=None, help="put each story's title before its body")
    g.add_argument(
        "--require-topic", action="store_true", default=None, help="keep only stories with at least one TOPICS category"
    )
    g = p.add_argument_group("20news")
    g.add_argument("--remove", help="also remove: footers, quotes (comma-separated; headers always)")
    g = p.add_argument_group("wikipedia")
    g.add_argument("--vocab", help="words to count: a vocabulary file or a prepared corpus directory")
    g.add_argument("--window", help="sliding window in tokens, or doc [10]")
    g.add_argument("--workers", type=int, help="counting processes [1]")
    g.add_argument("--dump", help="dump date YYYYMMDD for --download [latest]")
    return p


def settings_from(args, prepare_args, recipe):
    """Settings for ``recipe``; an option it does not use is an error, not silently ignored."""
    given = {k: getattr(args, k) for k in SPECIFIC if getattr(args, k) is not None}
    if prepare_args:
        given["prepare_args"] = prepare_args
    unused = [k for k in given if k not in recipe.options]
    if unused:
        flag = "-- PREPARE_ARGS" if unused[0] == "prepare_args" else "--" + unused[0].replace("_", "-")
        why = (
            ": it comes with its own train/test split"
            if unused[0] == "test_fraction" and recipe.function in (recipes.reuters, recipes.newsgroups)
            else ""
        )
        raise recipes.InputError(f"{flag} does not apply to {recipe.name}{why}")
    if "remove" in given:
        given["remove"] = tuple(given["remove"].split(","))
    runner = recipes.Subprocess(shlex.split(args.topictool)) if args.topictool else None
    return recipes.Settings(
        out=args.out,
        sources=args.sources,
        download=args.download,
        downloads=args.downloads,
        work=args.work,
        mirror=args.mirror,
        sha256=args.sha256,
        verify=args.verify,
        force=args.force,
        topictool=runner,
        **given,
    )


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    prepare_args = []
    if "--" in argv:
        i = argv.index("--")
        argv, prepare_args = argv[:i], argv[i + 1 :]
    args = parser().parse_args(argv)
    if args.list:
        for name, summary, urls in recipes.describe():
            print(f"{name:18} {summary}")
            for url in urls:
                print(f"{'':18}   {url}")
        return 0
    if not args.name or not args.out:
        parser().error("give NAME and -o OUT")
    who = f"fetch.py {args.name}"
    try:
        if args.name not in recipes.RECIPES:
            raise recipes.InputError(f"unknown data set {args.name!r} (known: {', '.join(recipes.RECIPES)})")
        settings = settings_from(args, prepare_args, recipes.RECIPES[args.name])
        record = recipes.run_recipe(args.name, settings)
    except recipes.ToolFailed as e:
        if not e.reported:
            print(f"{who}: error: {e}", file=sys.stderr)
        return e.exit_code
    except (TopicToolError, DownloadError) as e:
        print(f"{who}: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"{who}: interrupted (running the same command again resumes a download)", file=sys.stderr)
        return 130
    done = record.get("corpus") or {}
    parts = ", ".join(f"{p} {done[p]['D']:,}" for p in ("train", "test") if p in done)
    what = f"D={done['D']:,} ({parts}) W={done['W']:,}" if done else ""
    print(f"{who}: done -> {settings.out} {what}".rstrip(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
