"""topictool report (the self-contained HTML page, opened in a real headless Chromium), export
ldavis (pyLDAvis's prepared data) and export dfr-browser (its data files)."""

import html.parser
import json
import os
import shutil
import struct
import subprocess
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from topictool.report import compute
from topictool.report.ldavis import sorted_terms
from topictool.report.page import metric_series, training_curves
from topictool.snapshot import Snapshot
from topictool.topics import corpus_word_distribution, top_words

from .conftest import ROOT, run, shared

FIXTURES = ROOT / "tests" / "fixtures"


def ok(*args):
    r = run(*args)
    assert r.exit_code == 0, (args, r.stderr)
    return r


@pytest.fixture(scope="module")
def bars(tmp_path_factory):
    """The bars (600 + 100 documents) and an lda-gibbs run on them with --test, and its report."""
    d = tmp_path_factory.mktemp("report")
    ok("synth", "bars", "-o", d / "bars", "--documents", "600", "--test-documents", "100", "--seed", "3")
    ok("train", d / "bars", "-m", "lda-gibbs", "-K", "20", "-n", "150", "--seed", "1", "--log-every", "10",
       "--test", d / "bars", "--eval-every", "50", "-o", d / "run")  # fmt: skip
    ok("report", d / "run", "-o", d / "report.html", "--reference", d / "bars", "--window", "doc")
    return d


def page_data(path):
    text = Path(path).read_text(encoding="utf-8")
    start = text.index('<script type="application/json" id="report-data">') + len(
        '<script type="application/json" id="report-data">'
    )
    return json.loads(text[start : text.index("</script>", start)])


def python_ranking(snap, k, lam, R=30):
    """The relevance ranking computed here from phi alone: lam log phi + (1 - lam) log lift."""
    phi = snap.phi
    logphi = np.log(phi[k])
    loglift = logphi - np.log(corpus_word_distribution(phi, snap.topic_weight))
    rel = lam * logphi + (1.0 - lam) * loglift
    order = np.lexsort((np.arange(len(rel)), -rel))[:R]
    return [snap.vocab[v] for v in order]


# ---------------------------------------------------------------------------
# the figures


def test_candidates_rank_exactly_as_the_whole_vocabulary_at_every_grid_value():
    rng = np.random.default_rng(0)
    phi = rng.dirichlet(np.full(300, 0.05), size=6)
    phi[:, :40] = phi[:, :1]  # 40 words exactly tied in every topic
    phi /= phi.sum(axis=1, keepdims=True)
    w = rng.dirichlet(np.ones(6))
    lp, ll, _ = compute.log_terms(phi, w)
    cands = compute.candidates(lp, ll, 15, 0.05)
    for lam in compute.lambda_grid(0.05):
        rel = compute.relevance(lp, ll, lam)
        for k in range(6):
            whole = np.lexsort((np.arange(300), -rel[k]))[:15]
            c = cands[k]
            within = c[np.lexsort((c, -rel[k, c]))][:15]
            assert whole.tolist() == within.tolist()
    assert all(len(c) > 15 for c in cands)  # the grid adds words beyond one lambda's top 15


def test_lambda_grid_values_are_the_decimals():
    grid = compute.lambda_grid(0.01)
    assert len(grid) == 101 and grid[60] == 0.6 and grid[33] == 0.33 and grid[0] == 0.0 and grid[-1] == 1.0


def test_jsd_and_pcoa():
    rng = np.random.default_rng(1)
    phi = rng.dirichlet(np.ones(50), size=5)
    d = compute.jsd_matrix(phi)
    for i in range(5):
        for j in range(5):
            assert d[i, j] == pytest.approx(jensenshannon(phi[i], phi[j]) ** 2, abs=1e-12)
    # classical MDS recovers a planar configuration up to rotation: the same pairwise distances
    pts = rng.normal(size=(7, 2))
    dist = np.sqrt(((pts[:, None] - pts[None]) ** 2).sum(-1))
    xy = compute.pcoa(dist)
    assert np.allclose(np.sqrt(((xy[:, None] - xy[None]) ** 2).sum(-1)), dist, atol=1e-9)
    assert np.allclose(xy.mean(axis=0), 0, atol=1e-12)


def test_saliency_is_zero_for_a_word_spread_as_the_topics_are():
    phi = np.array([[0.5, 0.3, 0.2], [0.5, 0.1, 0.4]])
    s = compute.saliency(phi, [0.5, 0.5])
    assert s[0] == pytest.approx(0.0, abs=1e-15) and s[1] > 0 and s[2] > 0


# ---------------------------------------------------------------------------
# the page as a file


def test_the_report_is_one_file_with_no_url(bars):
    text = (bars / "report.html").read_text(encoding="utf-8")
    assert "http:" not in text.lower() and "https:" not in text.lower()
    assert " src=" not in text and "<link" not in text  # nothing loaded from elsewhere
    data = page_data(bars / "report.html")
    snap = Snapshot.load(bars / "run" / "model.npz")
    assert data["K"] == 20 and len(data["x"]) == 20 and len(data["topics"]) == 20
    assert data["N"] == 600 * 250 and sum(data["prevalence"]) == pytest.approx(1.0)
    # the table: one row a topic, coherence from the reference, Hellinger and top words
    assert text.count('<tr data-topic="') == 20 and "coherence (npmi)" in text
    words = top_words(snap, 8, "term-score")[4][2]
    assert " ".join(words) in text
    # the run's curves: log-likelihood, test perplexity, tokens/s as inline SVG (no topics in use for LDA)
    for title in ("log-likelihood", "test perplexity", "tokens/s"):
        assert f'aria-label="{title}"' in text
    assert "topics in use" not in text


def test_data_with_urls_and_markup_is_escaped():
    from topictool.report.page import no_urls_html, script_json

    text = script_json({"name": "see https://x.org </script><b>", "n": 1})
    assert "https:" not in text and "</script>" not in text and json.loads(text)["name"].startswith("see https://")
    assert no_urls_html("a http://b") == "a http&#58;//b"


def test_output_rule_and_bad_input(bars, tmp_path):
    r = run("report", bars / "run", "-o", bars / "report.html")
    assert r.exit_code == 2 and "already exists" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = run("report", tmp_path / "nothing", "-o", tmp_path / "r.html")
    assert r.exit_code == 2 and len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "r.html").exists()
    before = (bars / "report.html").read_bytes()
    ok("report", bars / "run", "-o", bars / "report.html", "--force", "--reference", bars / "bars", "--window", "doc")
    assert (bars / "report.html").read_bytes() == before  # the same page for the same model: deterministic


def test_a_snapshot_without_documents_or_tokens_still_reports(bars, tmp_path):
    snap = Snapshot.load(bars / "run" / "model.npz")
    bare = Snapshot(snap.phi, snap.alpha, snap.topic_weight, snap.vocab, meta={"model": "imported"})
    bare.save(tmp_path / "bare.npz")
    ok("report", tmp_path / "bare.npz", "-o", tmp_path / "bare.html")
    data = page_data(tmp_path / "bare.html")
    assert data["N"] is None and data["docs"] is None and "doc-topic" in data["docs_note"]
    text = (tmp_path / "bare.html").read_text(encoding="utf-8")
    assert "Training curves come with a run directory" in text
    # --corpus gives the token count
    ok("report", tmp_path / "bare.npz", "-o", tmp_path / "bare2.html", "--corpus", bars / "bars")
    assert page_data(tmp_path / "bare2.html")["N"] == 600 * 250


def test_top_documents_are_the_largest_proportions(bars):
    from topictool.export import training_doc_topics

    theta, csr, names = training_doc_topics(bars / "run")
    docs = page_data(bars / "report.html")["docs"]
    for k in (0, 7, 19):
        expect = np.lexsort((np.arange(len(theta)), -theta[:, k]))[:10]
        got = [docs["names"][i] for i, _, _ in docs["top"][k]]
        assert got == [names[d] for d in expect]
        assert [c for _, _, c in docs["top"][k]] == [int(x) for x in Snapshot.load(
            bars / "run" / "model.npz").doc_topic_matrix()[expect, k]]  # fmt: skip


def test_top_documents_a_chunk_at_a_time_equal_the_whole_table():
    from topictool.doc_topics import proportions_from_counts
    from topictool.report.page import top_documents_of_counts
    from topictool.snapshot import doc_topic_csr

    rng = np.random.default_rng(2)
    counts = rng.poisson(0.7, size=(53, 4)) * (rng.random((53, 4)) < 0.6)
    counts[5] = 0  # an empty document
    counts[10:14] = counts[20]  # exact ties
    alpha = np.array([0.1, 0.5, 0.2, 0.05])
    theta = proportions_from_counts(counts, alpha)
    for chunk in (1, 7, 1000):
        best = top_documents_of_counts(doc_topic_csr(dense=counts), alpha, 6, chunk)
        for k in range(4):
            expect = np.lexsort((np.arange(53), -theta[:, k]))[:6]
            assert best[k][1].tolist() == expect.tolist() and np.array_equal(best[k][0], theta[expect, k])


def test_curves_of_a_nonparametric_run_show_the_topics_in_use(tmp_path):
    rows = [{"iteration": i, "log_likelihood": -1000.0 + i, "active_topics": 30 - i, "tokens_per_s": 5e6}
            for i in range(1, 11)]  # fmt: skip
    rows[4]["effective_topics"] = 12.5
    rows.append({"iteration": 10, "log_likelihood": -5.0, "active_topics": 17})  # a resumed run logs it again
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows) + '{"torn": ')
    assert metric_series(rows, "active_topics") == (list(range(1, 11)), [float(30 - i) for i in range(1, 10)] + [17.0])
    hdp = Snapshot(np.full((2, 3), 1 / 3), np.ones(2), np.ones(2), ("a", "b", "c"), meta={"model": "hdp-gibbs"})
    text = training_curves(tmp_path, hdp)
    assert text.count("<svg") == 4 and 'aria-label="topics in use"' in text and "test perplexity" not in text
    assert 'aria-label="effective number of topics"' in text
    lda = Snapshot(hdp.phi, hdp.alpha, hdp.topic_weight, hdp.vocab, meta={"model": "lda-gibbs"})
    assert "topics in use" not in training_curves(tmp_path, lda)


# ---------------------------------------------------------------------------
# export ldavis


def test_export_ldavis_follows_pyldavis_prepared_data(bars):
    ok("export", "ldavis", bars / "run", "-o", bars / "lda.json")
    data = json.loads((bars / "lda.json").read_text())
    fixture = json.loads((FIXTURES / "ldavis" / "prepared.json").read_text())
    assert list(data) == list(fixture)  # the members, in to_dict()'s order
    for table in ("mdsDat", "tinfo", "token.table", "plot.opts"):
        assert sorted(data[table]) == sorted(fixture[table]), table
        lengths = {len(v) for v in data[table].values()} if table != "plot.opts" else {1}
        assert len(lengths) == 1, table  # columns of equal length
        for col, values in data[table].items():
            kind = type(fixture[table][col][0]) if table != "plot.opts" else type(fixture[table][col])
            sample = values[0] if table != "plot.opts" else values
            assert isinstance(sample, float if kind is float else kind) or (kind is float and isinstance(sample, int))
    K, R = 20, data["R"]
    assert data["mdsDat"]["topics"] == list(range(1, K + 1)) and data["mdsDat"]["cluster"] == [1] * K
    freq = data["mdsDat"]["Freq"]
    assert sum(freq) == pytest.approx(100.0) and freq == sorted(freq, reverse=True)
    assert sorted(data["topic.order"]) == list(range(1, K + 1)) and R == 30 and data["lambda.step"] == 0.01
    assert data["tinfo"]["Category"][:R] == ["Default"] * R
    snap = Snapshot.load(bars / "run" / "model.npz")
    prob, lift = top_words(snap, R, "prob"), top_words(snap, R, "lift")
    for j in range(1, K + 1):
        k = data["topic.order"][j - 1] - 1
        assert sorted_terms(data, j, 1.0)[:R] == prob[k][2], j
        assert sorted_terms(data, j, 0.0)[:R] == lift[k][2], j
        assert freq[j - 1] == pytest.approx(100 * snap.topic_weight[k] / snap.topic_weight.sum())
    t = data["token.table"]
    keys = list(zip(t["Term"], t["Topic"]))
    assert keys == sorted(keys) and all(0 < f <= 1 + 1e-9 for f in t["Freq"])
    r = run("export", "ldavis", bars / "run", "-o", bars / "lda.json")
    assert r.exit_code == 2 and "already exists" in r.stderr


# ---------------------------------------------------------------------------
# export dfr-browser


def test_export_dfr_browser_files(bars):
    out = bars / "dfr"
    ok("export", "dfr-browser", bars / "run", "-o", out)
    assert {p.name for p in out.iterdir() if not p.name.startswith(".")} == {
        "info.json",
        "tw.json",
        "dt.json.zip",
        "meta.csv.zip",
    }
    snap = Snapshot.load(bars / "run" / "model.npz")
    info = json.loads((out / "info.json").read_text())
    assert {"title", "meta_info"} <= set(info)
    tw = json.loads((out / "tw.json").read_text())
    assert tw["alpha"] == pytest.approx(list(snap.alpha)) and len(tw["tw"]) == 20
    for k, (_, _, words, _) in enumerate(top_words(snap, 50, "prob")):
        assert tw["tw"][k]["words"] == words and tw["tw"][k]["weights"] == sorted(tw["tw"][k]["weights"])[::-1]
    with zipfile.ZipFile(out / "dt.json.zip") as z:
        dt = json.loads(z.read(z.infolist()[0]))
    with zipfile.ZipFile(out / "meta.csv.zip") as z:
        meta = z.read(z.infolist()[0]).decode().splitlines()
    counts = snap.doc_topic_matrix()
    dense = np.zeros_like(counts)
    for t in range(20):  # compressed sparse columns: topic t's documents i[p[t]:p[t+1]]
        sl = slice(dt["p"][t], dt["p"][t + 1])
        dense[dt["i"][sl], t] = dt["x"][sl]
    assert np.array_equal(dense, counts) and len(meta) == counts.shape[0] == 600
    assert all(len(row.split(",")) == 8 for row in meta)
    r = run("export", "dfr-browser", bars / "run", "-o", out)
    assert r.exit_code == 2 and "already exists" in r.stderr
    ok("export", "dfr-browser", bars / "run", "-o", out, "--force", "--top", "5")
    assert len(json.loads((out / "tw.json").read_text())["tw"][0]["words"]) == 5
    (out / "mine.txt").write_text("a user's file")
    r = run("export", "dfr-browser", bars / "run", "-o", out, "--force")
    assert r.exit_code == 2 and "mine.txt" in r.stderr  # never replaces what it did not write


# ---------------------------------------------------------------------------
# the page in a real browser


def _required():
    return bool(os.environ.get("CI")) or os.environ.get("TOPICTOOL_BROWSER_TEST") == "required"


@pytest.fixture(scope="module")
def chromium():
    path = os.environ.get("TOPICTOOL_CHROMIUM") or next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
    )
    if path is None:
        msg = "no headless Chromium on this machine (Debian: apt-get install chromium; .ci/run installs it in CI)"
        if _required():
            pytest.fail(msg + ": the browser test must run in CI")
        pytest.skip(msg)
    return path


def browse(chromium, tmp_path, url, *args):
    """Run headless Chromium on ``url``; (stdout, stderr)."""
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
           "--force-device-scale-factor=1", f"--user-data-dir={profile}", "--enable-logging=stderr", "--v=0",
           "--virtual-time-budget=5000", *args, url]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    return r.stdout, r.stderr


class Dom(html.parser.HTMLParser):
    """What the tests read of a dumped DOM: the term list, the documents, the circles, #errors."""

    def __init__(self, text):
        super().__init__()
        self.terms, self.docs, self.circles, self.errors, self.body = [], [], [], [], {}
        self.map_box = None
        self._in = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        cls = (a.get("class") or "").split()
        if tag == "body":
            self.body = a
        elif tag == "svg" and a.get("id") == "map":
            self.map_box = [float(x) for x in a["data-box"].split()]
        elif tag == "circle" and "topic" in cls:
            self.circles.append(a)
        elif tag == "span" and ("term" in cls or "doc" in cls):
            self._in = "terms" if "term" in cls else "docs"
            getattr(self, self._in).append("")
        elif tag == "li" and self._in == "errors":
            self.errors.append("")
        elif tag == "ul" and a.get("id") == "errors":
            self._in = "errors"

    def handle_endtag(self, tag):
        if tag in ("span", "ul") and self._in in ("terms", "docs", "errors"):
            self._in = None

    def handle_data(self, data):
        if self._in in ("terms", "docs"):
            getattr(self, self._in)[-1] += data
        elif self._in == "errors" and self.errors:
            self.errors[-1] += data


def console_lines(stderr):
    return [line for line in stderr.splitlines() if ":CONSOLE" in line]


def test_the_page_ranks_terms_as_python_does(bars, chromium, tmp_path):
    snap = Snapshot.load(bars / "run" / "model.npz")
    data = page_data(bars / "report.html")
    url = (bars / "report.html").as_uri()
    cases = [(3, "0.6", 0.6), (0, "1", 1.0), (11, "0", 0.0), (19, "0.33", 0.33), (7, "0.3333", 0.33), (5, "2", 1.0)]
    for k, text, lam in cases:
        out, err = browse(chromium, tmp_path, f"{url}#topic={k}&lambda={text}", "--dump-dom")
        dom = Dom(out)
        assert dom.errors == [] and console_lines(err) == [], (dom.errors, console_lines(err))
        assert dom.terms == python_ranking(snap, k, lam), (k, lam)
        assert dom.body.get("data-state") == f"topic={k}&lambda={lam:g}"
        assert sorted(int(c["data-topic"]) for c in dom.circles) == list(range(20))
        assert [int(c["data-topic"]) for c in dom.circles if "selected" in c["class"]] == [k]
        assert dom.docs == [data["docs"]["names"][i] for i, _, _ in data["docs"]["top"][k]]
    # no topic (or one out of range): the most salient terms, no documents
    for fragment in ("", "#topic=20&lambda=0.5", "#topic=x"):
        dom = Dom(browse(chromium, tmp_path, url + fragment, "--dump-dom")[0])
        assert dom.errors == [] and dom.docs == []
        assert dom.terms == [data["terms"][i] for i in data["default"]] and len(dom.terms) == 30
        assert not any("selected" in c["class"] for c in dom.circles)


def test_a_broken_page_is_caught(bars, chromium, tmp_path):
    """The checks above would see a script error: the page reports it in #errors."""
    text = (bars / "report.html").read_text(encoding="utf-8").replace("drawMap();\n  render();", "drawMap(); nope();")
    (tmp_path / "broken.html").write_text(text, encoding="utf-8")
    out, err = browse(chromium, tmp_path, (tmp_path / "broken.html").as_uri() + "#topic=1", "--dump-dom")
    dom = Dom(out)
    assert any("nope" in e for e in dom.errors) and dom.terms == []


HARNESS = """<!DOCTYPE html><html><body><pre id="out"></pre>
<iframe id="f" src="report.html#topic=3&lambda=0.6" width="1200" height="900"></iframe>
<script>
var f = document.getElementById("f"), out = [];
function later(fn) { setTimeout(fn, 50); }
f.addEventListener("load", function () {
  var w = f.contentWindow, d = f.contentDocument;
  function note(what) {
    out.push({what: what, hash: w.location.hash, history: w.history.length,
              terms: Array.from(d.querySelectorAll("#terms .term")).map(function (e) { return e.textContent; }),
              rows: Array.from(d.querySelectorAll("tbody tr")).map(function (r) { return r.dataset.topic; }),
              errors: d.getElementById("errors").textContent});
  }
  note("start");
  var slider = d.getElementById("lambda");
  later(function () {  // after the load event: a fragment set now would replace the entry anyway
  slider.value = "0.2";
  slider.dispatchEvent(new Event("input"));
  later(function () {
    note("slider");
    d.querySelector('circle[data-topic="5"]').dispatchEvent(new MouseEvent("click", {bubbles: true}));
    later(function () {
      note("circle");
      d.querySelector('tr[data-topic="9"]').click();
      later(function () {
        note("row");
        d.getElementById("map-background").dispatchEvent(new MouseEvent("click", {bubbles: true}));
        later(function () {
          note("background");
          d.querySelectorAll("table.topics th")[1].click();
          note("sorted");
          document.getElementById("out").textContent = JSON.stringify(out);
        });
      });
    });
  });
  });
});
</script></body></html>
"""


def test_the_slider_circles_rows_and_headers_drive_the_fragment(bars, chromium, tmp_path):
    shutil.copy(bars / "report.html", tmp_path / "report.html")
    (tmp_path / "harness.html").write_text(HARNESS, encoding="utf-8")
    out, err = browse(chromium, tmp_path, (tmp_path / "harness.html").as_uri(), "--allow-file-access-from-files",
                      "--dump-dom")  # fmt: skip
    text = out[out.index('<pre id="out">') + len('<pre id="out">') : out.index("</pre>")]
    steps = {s["what"]: s for s in json.loads(html.unescape(text))}
    snap = Snapshot.load(bars / "run" / "model.npz")
    data = page_data(bars / "report.html")
    assert steps["slider"]["hash"] == "#topic=3&lambda=0.2" and steps["slider"]["terms"] == python_ranking(snap, 3, 0.2)
    assert steps["circle"]["hash"] == "#topic=5&lambda=0.2" and steps["circle"]["terms"] == python_ranking(snap, 5, 0.2)
    assert steps["row"]["hash"] == "#topic=9&lambda=0.2" and steps["row"]["terms"] == python_ranking(snap, 9, 0.2)
    assert steps["background"]["hash"] == "#lambda=0.2"
    assert steps["background"]["terms"] == [data["terms"][i] for i in data["default"]]
    # the slider replaced its history entry, each selection added one
    assert steps["start"]["hash"] == "#topic=3&lambda=0.6" and steps["start"]["terms"] == python_ranking(snap, 3, 0.6)
    assert steps["slider"]["history"] == steps["start"]["history"]
    assert steps["circle"]["history"] == steps["slider"]["history"] + 1
    by_prevalence = np.lexsort((np.arange(20), -np.asarray(data["prevalence"])))
    assert steps["sorted"]["rows"] == [str(k) for k in by_prevalence]
    assert all(s["errors"] == "" for s in steps.values()) and console_lines(err) == []


def test_words_with_markup_or_addresses_are_shown_as_written(chromium, tmp_path):
    words = ("<script>", "a&b", "http://x.org", 'say "hi"', "</script>", "plain", "über", "x<y")
    rng = np.random.default_rng(4)
    phi = rng.dirichlet(np.ones(len(words)), size=2)
    Snapshot(phi, np.ones(2), np.array([0.7, 0.3]), words, meta={"model": "<b>odd</b>"}).save(tmp_path / "odd.npz")
    ok("report", tmp_path / "odd.npz", "-o", tmp_path / "odd.html")
    text = (tmp_path / "odd.html").read_text(encoding="utf-8")
    assert "http:" not in text and "<b>odd" not in text
    assert text.count("<script") == text.count("</script>") == 2  # the data's and the code's, no word's
    snap = Snapshot.load(tmp_path / "odd.npz")
    for k, lam in ((0, 0.5), (1, 0.0)):
        out, err = browse(
            chromium, tmp_path, f"{(tmp_path / 'odd.html').as_uri()}#topic={k}&lambda={lam}", "--dump-dom"
        )
        dom = Dom(out)
        assert dom.errors == [] and console_lines(err) == []
        assert dom.terms == python_ranking(snap, k, lam) and len(dom.terms) == len(words)


def test_a_single_topic_model_reports(tmp_path):
    Snapshot(np.full((1, 3), 1 / 3), np.ones(1), np.ones(1), ("a", "b", "c")).save(tmp_path / "one.npz")
    ok("report", tmp_path / "one.npz", "-o", tmp_path / "one.html")
    data = page_data(tmp_path / "one.html")
    assert data["x"] == [0.0] and data["y"] == [0.0] and data["R"] == 3


def read_png(path):
    """(H, W, 3) uint8 pixels of an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes)."""
    raw = Path(path).read_bytes()
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks, header = 8, [], None
    while pos < len(raw):
        (n,) = struct.unpack(">I", raw[pos : pos + 4])
        kind, body = raw[pos + 4 : pos + 8], raw[pos + 8 : pos + 8 + n]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            chunks.append(body)
        pos += 12 + n
    width, height, depth, color, _, _, interlace = header
    assert depth == 8 and color in (2, 6) and interlace == 0, header
    bpp = 3 if color == 2 else 4
    data = zlib.decompress(b"".join(chunks))
    stride = width * bpp
    img = np.zeros((height, stride), dtype=np.uint8)
    prev = np.zeros(stride, dtype=np.int64)
    for y in range(height):
        f = data[y * (stride + 1)]
        line = np.frombuffer(data, np.uint8, stride, y * (stride + 1) + 1).astype(np.int64)
        if f == 0:
            cur = line
        elif f == 2:
            cur = (line + prev) % 256
        else:  # Sub, Average, Paeth: byte by byte
            cur = line.copy()
            for i in range(stride):
                left = cur[i - bpp] if i >= bpp else 0
                up, ul = prev[i], (prev[i - bpp] if i >= bpp else 0)
                if f == 1:
                    pred = left
                elif f == 3:
                    pred = (left + up) // 2
                else:
                    p = left + up - ul
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - ul)
                    pred = left if pa <= pb and pa <= pc else (up if pb <= pc else ul)
                cur[i] = (cur[i] + pred) % 256
        img[y] = cur
        prev = cur
    return img.reshape(height, width, bpp)[:, :, :3]


def test_a_screenshot_shows_one_circle_per_topic(bars, chromium, tmp_path):
    url = (bars / "report.html").as_uri() + "#topic=6&lambda=0.6"
    dom = Dom(browse(chromium, tmp_path, url, "--dump-dom", "--window-size=1200,900")[0])
    browse(chromium, tmp_path, url, f"--screenshot={tmp_path / 'shot.png'}", "--window-size=1200,900")
    img = read_png(tmp_path / "shot.png").astype(int)
    assert img.shape == (900, 1200, 3)
    assert len(np.unique(img.reshape(-1, 3), axis=0)) > 50 and (img.sum(axis=2) < 600).mean() > 0.01  # not blank
    left, top, width, height = dom.map_box
    assert width == height == 460 and left + width < 1200 and top + height < 900
    assert len(dom.circles) == 20
    selected = [c for c in dom.circles if "selected" in c["class"]]
    assert [c["data-topic"] for c in selected] == ["6"] and dom.circles[-1] is selected[0]  # drawn on top
    for c in dom.circles:  # around each circle's centre, off its label: circle colour, not background or text
        x0, y0, r = left + float(c["cx"]), top + float(c["cy"]), float(c["r"])
        pts = [
            img[int(y0 + dy * 0.6 * r), int(x0 + dx * 0.6 * r)]
            for dx, dy in ((-0.7, -0.7), (0.7, -0.7), (-0.7, 0.7), (0.7, 0.7))
        ]
        if "selected" in c["class"]:
            assert all(p[0] > p[2] + 60 and p[0] > p[1] + 60 for p in pts), (c, pts)
        else:
            assert sum(p.min() < 235 and p.max() > 120 and p[2] > p[0] for p in pts) >= 2, (c, pts)
    # the background of the map, away from every circle, is white
    cx = np.array([float(c["cx"]) for c in dom.circles])
    cy = np.array([float(c["cy"]) for c in dom.circles])
    rad = np.array([float(c["r"]) for c in dom.circles])
    free = [(x, y) for x in range(5, 455, 15) for y in range(5, 455, 15)
            if (np.hypot(cx - x, cy - y) > rad + 3).all() and abs(x - 230) > 3 and abs(y - 230) > 3]  # fmt: skip
    assert len(free) > 100
    assert all(img[int(top + y), int(left + x)].min() > 245 for x, y in free[:: max(1, len(free) // 60)])


# ---------------------------------------------------------------------------
# the movie reviews at K=100


def test_a_k100_movie_review_report_is_under_5_mb(tmp_path):
    reviews = shared("nltk", "movie_reviews.zip")
    ok("prepare", reviews, "-o", tmp_path / "movies")
    ok("train", tmp_path / "movies", "-m", "lda-gibbs", "-K", "100", "-n", "20", "--seed", "1", "-o", tmp_path / "run")
    ok("report", tmp_path / "run", "-o", tmp_path / "movies.html")
    size = (tmp_path / "movies.html").stat().st_size
    text = (tmp_path / "movies.html").read_text(encoding="utf-8")
    assert size < 5_000_000 and "http:" not in text and "https:" not in text
    data = page_data(tmp_path / "movies.html")
    assert data["K"] == 100 and data["N"] > 400_000 and len(data["docs"]["top"][0]) == 10
    assert any("neg/" in n or "pos/" in n for n in data["docs"]["names"])  # named as prepare recorded them
