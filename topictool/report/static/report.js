/* topictool report: the page's own script. It reads the JSON in #report-data (written by
   topictool/report/page.py), draws the intertopic distance map, ranks the selected topic's
   terms by relevance, lists its top documents and keeps the state in the URL fragment:
   #topic=3&lambda=0.6 (topic: topictool's 0-based index). Any error is shown in #errors. */
(function () {
  "use strict";

  var errors = document.getElementById("errors");
  function showError(message) {
    var li = document.createElement("li");
    li.textContent = String(message);
    errors.appendChild(li);
    errors.hidden = false;
  }
  window.addEventListener("error", function (e) {
    showError(e.message + (e.lineno ? " (line " + e.lineno + ")" : ""));
  });
  window.addEventListener("unhandledrejection", function (e) { showError(e.reason); });
  var consoleError = console.error;
  console.error = function () {
    showError(Array.prototype.join.call(arguments, " "));
    consoleError.apply(console, arguments);
  };

  var data = JSON.parse(document.getElementById("report-data").textContent);
  var steps = Math.round(1 / data.lambda_step);
  var state = { topic: null, lambda: 1 };
  var map = document.getElementById("map");
  var SVG_NS = map.namespaceURI;  // the inline <svg>'s namespace, so no URL is written here
  var circles = [], drawOrder = [];
  var rows = Array.prototype.slice.call(document.querySelectorAll("table.topics tbody tr"));

  function el(tag, attrs, text, ns) {
    var node = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function fmt(x) {
    if (x >= 100) return Math.round(x).toLocaleString("en-US");
    return x >= 1 ? x.toFixed(1) : x.toPrecision(2);
  }

  function snapLambda(x) {  // the slider's grid: i / steps, as Python's lambda_grid
    return Math.round(Math.min(1, Math.max(0, x)) * steps) / steps;
  }

  // ---- the URL fragment ----

  function readHash() {
    var params = {};
    location.hash.replace(/^#/, "").split("&").forEach(function (part) {
      var i = part.indexOf("=");
      if (i > 0) params[decodeURIComponent(part.slice(0, i))] = decodeURIComponent(part.slice(i + 1));
    });
    var t = Number(params.topic);
    state.topic = params.topic !== undefined && Number.isInteger(t) && t >= 0 && t < data.K ? t : null;
    var l = parseFloat(params.lambda);
    state.lambda = isFinite(l) ? snapLambda(l) : 1;
  }

  function writeHash(topic, lambda, replace) {
    var parts = [];
    if (topic !== null) parts.push("topic=" + topic);
    parts.push("lambda=" + lambda);
    var hash = "#" + parts.join("&");  // the hashchange listener renders
    if (replace) location.replace(hash);  // the slider: no history entry per step
    else location.hash = hash;  // a topic: the Back button returns to the previous one
  }

  function select(topic) {
    writeHash(topic === state.topic ? null : topic, state.lambda);
  }

  // ---- the intertopic distance map ----

  function drawMap() {
    var size = Number(map.getAttribute("width")), pad = 12;
    var area = 0.2 * size * size;  // the circles' total area: a fifth of the map
    var radius = data.prevalence.map(function (p) { return Math.max(2, Math.sqrt((p * area) / Math.PI)); });
    var lo = [Infinity, Infinity], hi = [-Infinity, -Infinity];
    data.x.forEach(function (x, k) {
      var y = data.y[k];
      lo[0] = Math.min(lo[0], x); hi[0] = Math.max(hi[0], x);
      lo[1] = Math.min(lo[1], y); hi[1] = Math.max(hi[1], y);
    });
    var span = Math.max(hi[0] - lo[0], hi[1] - lo[1]) || 1;
    var inner = size - 2 * pad - 2 * Math.max.apply(null, radius);
    var scale = inner / span;
    function px(x, i) { return size / 2 + (x - (lo[i] + hi[i]) / 2) * scale * (i === 0 ? 1 : -1); }
    var g = document.getElementById("circles"), labels = document.getElementById("labels");
    drawOrder = data.prevalence.map(function (p, k) { return k; });
    drawOrder.sort(function (a, b) { return radius[b] - radius[a] || a - b; });  // small ones on top
    drawOrder.forEach(function (k) {
      var cx = px(data.x[k], 0).toFixed(1), cy = px(data.y[k], 1).toFixed(1);
      var c = el("circle", { class: "topic", "data-topic": k, cx: cx, cy: cy, r: radius[k].toFixed(1) }, undefined, SVG_NS);
      c.appendChild(el("title", {}, "topic " + k + " (" + (100 * data.prevalence[k]).toFixed(1) + "%): " + data.labels[k], SVG_NS));
      c.addEventListener("click", function (e) { e.stopPropagation(); select(k); });
      circles[k] = c;
      g.appendChild(c);
    });
    drawOrder.forEach(function (k) {
      labels.appendChild(el("text", { class: "topic-label", x: circles[k].getAttribute("cx"),
        y: (Number(circles[k].getAttribute("cy")) + 4).toFixed(1) }, String(k), SVG_NS));
    });
    map.addEventListener("click", function () { if (state.topic !== null) select(state.topic); });
    var box = map.getBoundingClientRect();  // where the map is on the page (for screenshots)
    map.setAttribute("data-box", [box.left + window.scrollX, box.top + window.scrollY, box.width, box.height].join(" "));
  }

  // ---- the term list ----

  function ranked(topic, lambda) {  // [term index, topic count, corpus count] by relevance
    var t = data.topics[topic], n = data.N || 1, share = data.prevalence[topic] * n;
    var idx = t.t.map(function (term, i) { return i; });
    var rel = t.lp.map(function (lp, i) { return lambda * lp + (1 - lambda) * t.ll[i]; });
    idx.sort(function (a, b) { return rel[b] - rel[a] || t.t[a] - t.t[b]; });  // ties: word order
    return idx.slice(0, data.R).map(function (i) {
      return [t.t[i], Math.exp(t.lp[i]) * share, data.pw[t.t[i]] * n];
    });
  }

  function salient() {
    var n = data.N || 1;
    return data.default.map(function (term) { return [term, null, data.pw[term] * n]; });
  }

  function drawTerms(items) {
    var list = document.getElementById("terms");
    list.textContent = "";
    var max = Math.max.apply(null, items.map(function (r) { return r[2]; })) || 1;
    items.forEach(function (r) {
      var bar = el("span", { class: "bar" });
      bar.appendChild(el("span", { class: "total", style: "width:" + (100 * r[2] / max).toFixed(2) + "%" }));
      if (r[1] !== null) bar.appendChild(el("span", { class: "part", style: "width:" + (100 * r[1] / max).toFixed(2) + "%" }));
      var li = el("li", { "data-term": data.terms[r[0]] });
      li.appendChild(el("span", { class: "term" }, data.terms[r[0]]));
      li.appendChild(bar);
      li.appendChild(el("span", { class: "num" }, r[1] === null ? fmt(r[2]) : fmt(r[1]) + " / " + fmt(r[2])));
      list.appendChild(li);
    });
  }

  // ---- the documents ----

  function drawDocs(topic) {
    var list = document.getElementById("docs"), note = document.getElementById("docs-note");
    list.textContent = "";
    if (!data.docs) { note.textContent = data.docs_note; return; }
    if (topic === null) { note.textContent = "Select a topic to see the documents where it is most prominent."; return; }
    note.textContent = "By the topic's share of the document.";
    data.docs.top[topic].forEach(function (d) {
      var li = el("li", { "data-doc": d[0] });
      li.appendChild(el("span", { class: "doc" }, data.docs.names[d[0]]));
      li.appendChild(el("span", { class: "num" }, " " + (100 * d[1]).toFixed(1) + "%" + (d[2] === null ? "" : ", " + d[2] + " tokens")));
      list.appendChild(li);
    });
  }

  // ---- one render of the whole state ----

  function render() {
    readHash();
    var topic = state.topic, lambda = state.lambda;
    circles.forEach(function (c, k) { c.classList.toggle("selected", k === topic); });
    drawOrder.forEach(function (k) { if (k !== topic) circles[k].parentNode.appendChild(circles[k]); });
    if (topic !== null) circles[topic].parentNode.appendChild(circles[topic]);  // the selected one on top
    rows.forEach(function (r) { r.classList.toggle("selected", Number(r.getAttribute("data-topic")) === topic); });
    document.getElementById("lambda").value = lambda;
    document.getElementById("lambda-value").textContent = lambda.toFixed(2);
    document.getElementById("lambda-control").hidden = topic === null;
    var title = document.getElementById("terms-title"), note = document.getElementById("terms-note");
    if (topic === null) {
      title.textContent = "Most salient terms";
      note.textContent = "Saliency over all topics (Chuang et al. 2012); select a topic for its own terms.";
      drawTerms(salient());
    } else {
      title.textContent = "Topic " + topic + ": " + (100 * data.prevalence[topic]).toFixed(1) + "% of tokens";
      note.textContent = "Top " + data.R + " terms by relevance \u03bb\u00b7log p(w|k) + (1\u2212\u03bb)\u00b7log lift (Sievert & Shirley 2014).";
      drawTerms(ranked(topic, lambda));
    }
    drawDocs(topic);
    document.body.setAttribute("data-state", (topic === null ? "" : "topic=" + topic + "&") + "lambda=" + lambda);
  }

  // ---- the topic table: click a row to select, a header to sort ----

  rows.forEach(function (r) {
    r.addEventListener("click", function () { select(Number(r.getAttribute("data-topic"))); });
  });
  Array.prototype.forEach.call(document.querySelectorAll("table.topics th"), function (th, col) {
    th.addEventListener("click", function () {
      var body = th.closest("table").tBodies[0];
      var dir = th.getAttribute("data-dir") === "desc" ? 1 : -1;
      th.setAttribute("data-dir", dir === 1 ? "asc" : "desc");
      var sorted = rows.slice().sort(function (a, b) {
        var x = a.cells[col].getAttribute("data-value"), y = b.cells[col].getAttribute("data-value");
        var nx = Number(x), ny = Number(y);
        var cmp = isFinite(nx) && isFinite(ny) && x !== "" && y !== "" ? nx - ny : String(x).localeCompare(String(y));
        return dir * cmp || Number(a.getAttribute("data-topic")) - Number(b.getAttribute("data-topic"));
      });
      sorted.forEach(function (r) { body.appendChild(r); });
    });
  });

  document.getElementById("lambda").addEventListener("input", function (e) {
    writeHash(state.topic, snapLambda(parseFloat(e.target.value)), true);
  });
  window.addEventListener("hashchange", render);

  drawMap();
  render();
})();
