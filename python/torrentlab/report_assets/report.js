/* torrentlab report: draws the page's plots as SVG and makes its tables
   sortable. Plain JavaScript with no library and no network access; it is
   copied into every report by python/torrentlab/report.py.

   The data are the JSON of the script element #tl-data: {"plots": {ID: spec}}.
   A spec is {xlabel, xcats?, xlog?, xdomain?, dodge?, markers?, variants:
   [{name, ylabel, ylog?, ydomain?, series: [{name, x, y, lo?, hi?, n?,
   step?}]}]}; a domain is [lo, hi], null for the data's own end.
   Each <div class="tl-plot" data-spec="ID"> is drawn from its spec; once
   drawn it carries data-rendered="1", data-marks (points drawn) and
   data-series (series shown), which the tests read. Any error is listed in
   the #errors box, which is shown when it is not empty. */
(() => {
  "use strict";
  const NS = "http://www.w3.org/2000/svg";
  const COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                  "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f"];
  const DASHES = ["", "7 3", "2 3", "9 3 2 3"];
  // The drawing's own units (the SVG scales to the page's width).
  const W = 720, H = 360, M = { l: 72, r: 14, t: 12, b: 46 };
  const NEAR = 28; // hover picks the nearest point within this distance

  /** Lists an error in the page's #errors box and shows the box. */
  function fail(where, err) {
    const box = document.getElementById("errors");
    if (!box) return;
    const li = document.createElement("li");
    li.textContent = where + ": " + (err && err.message ? err.message : String(err));
    box.appendChild(li);
    box.hidden = false;
  }
  window.addEventListener("error", (e) => fail("error", e.error || e.message));
  window.addEventListener("unhandledrejection", (e) => fail("unhandled rejection", e.reason));

  /** A short text for a number: 4 significant digits, exponent when far from 1. */
  function fmt(v) {
    if (v === null || v === undefined || !isFinite(v)) return "–";
    const a = Math.abs(v);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2).replace(/\.?0+e/, "e");
    return String(Number(v.toPrecision(4)));
  }

  /** An element of the HTML (or, with ns, SVG) namespace with attributes. */
  function el(tag, attrs, ns) {
    const e = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    return e;
  }
  const sv = (tag, attrs) => el(tag, attrs, NS);

  /** Round tick values between lo and hi, about n of them. */
  function linTicks(lo, hi, n) {
    const span = hi - lo, mag = Math.pow(10, Math.floor(Math.log10(span / n)));
    const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => span / s <= n) || 10 * mag;
    const out = [];
    for (let k = Math.ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; k++) out.push(k * step);
    return out;
  }

  /** Powers of ten between lo and hi (with 2 and 5 when they span few decades). */
  function logTicks(lo, hi) {
    const a = Math.floor(Math.log10(lo)), b = Math.ceil(Math.log10(hi));
    const mult = b - a <= 2 ? [1, 2, 5] : [1];
    const out = [];
    for (let e = a; e <= b; e++) {
      for (const m of mult) {
        const v = m * Math.pow(10, e);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) out.push(v);
      }
    }
    return out;
  }

  /** The range of the finite values (positive ones only on a log axis). */
  function extent(values, log) {
    let lo = Infinity, hi = -Infinity;
    for (const v of values) {
      if (v === null || !isFinite(v) || (log && v <= 0)) continue;
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
    if (lo > hi) return null;
    if (lo === hi) return log ? [lo / 2, hi * 2] : [lo - (Math.abs(lo) || 1) * 0.1, hi + (Math.abs(hi) || 1) * 0.1];
    return [lo, hi];
  }

  /** An axis' range: the data's, widened by `pad` of its span (a factor on a
      log axis), with the fixed ends of `fixed` ([lo, hi], null: the data's). */
  function domain(data, fixed, log, pad) {
    if (!data) return null;
    let [lo, hi] = log ? [data[0] / (1 + pad * 4), data[1] * (1 + pad * 4)]
      : [data[0] - (data[1] - data[0]) * pad, data[1] + (data[1] - data[0]) * pad];
    if (fixed && fixed[0] !== null && (!log || fixed[0] > 0)) lo = fixed[0];
    if (fixed && fixed[1] !== null && (!log || fixed[1] > 0)) hi = fixed[1];
    return hi > lo ? [lo, hi] : data;
  }

  /** Maps [lo, hi] onto [a, b], linearly or logarithmically. */
  function scale(lo, hi, a, b, log) {
    if (log) {
      const l0 = Math.log10(lo), l1 = Math.log10(hi);
      return (v) => (v > 0 ? a + ((Math.log10(v) - l0) / (l1 - l0)) * (b - a) : NaN);
    }
    return (v) => a + ((v - lo) / (hi - lo)) * (b - a);
  }

  function* allOf(series, keys) {
    for (const s of series) for (const k of keys) if (s[k]) yield* s[k];
  }

  /** One interactive plot: variants, log axes, legend, hover. */
  class Plot {
    constructor(root, spec) {
      this.root = root;
      this.spec = spec;
      this.variant = 0;
      this.hidden = new Set();
      this.xlog = !!spec.xlog;
      this.ylog = !!spec.variants[0].ylog;
      this.build();
      this.draw();
    }

    get current() { return this.spec.variants[this.variant]; }

    /** Whether every finite value of the axis is positive (a log axis can show them). */
    canLog(axis) {
      if (axis === "x" && this.spec.xcats) return false;
      const keys = axis === "x" ? ["x"] : ["y", "lo", "hi"];
      let any = false;
      for (const v of allOf(this.current.series, keys)) {
        if (v === null || !isFinite(v)) continue;
        if (v <= 0) return false;
        any = true;
      }
      return any;
    }

    build() {
      const bar = el("div", { class: "tl-controls" });
      const variants = this.spec.variants;
      if (variants.length > 1) {
        const sel = el("select", { "aria-label": "quantity" });
        variants.forEach((v, i) => { const o = el("option", { value: String(i) }); o.textContent = v.name; sel.appendChild(o); });
        sel.addEventListener("change", () => {
          this.variant = +sel.value;
          this.ylog = !!this.current.ylog;
          this.draw();
        });
        bar.appendChild(sel);
      }
      this.logButtons = {};
      for (const axis of ["x", "y"]) {
        const b = el("button", { type: "button", class: "tl-log" });
        b.textContent = "log " + axis;
        b.addEventListener("click", () => { this[axis + "log"] = !this[axis + "log"]; this.draw(); });
        this.logButtons[axis] = b;
        bar.appendChild(b);
      }
      this.svg = sv("svg", { viewBox: `0 0 ${W} ${H}`, role: "img" });
      this.tip = el("div", { class: "tl-tip" });
      this.tip.hidden = true;
      const canvas = el("div", { class: "tl-canvas" });
      canvas.append(this.svg, this.tip);
      this.canvas = canvas;
      this.legend = el("ul", { class: "tl-legend" });
      const row = el("div", { class: "tl-row" });
      row.append(canvas, this.legend);
      this.root.append(bar, row);
      this.svg.addEventListener("mousemove", (e) => this.hover(e));
      this.svg.addEventListener("mouseleave", () => this.unhover());
    }

    /** Draws the current variant's shown series, then the legend. */
    draw() {
      const spec = this.spec, v = this.current, svg = this.svg;
      svg.replaceChildren();
      this.unhover();
      const xlog = this.xlog && this.canLog("x"), ylog = this.ylog && this.canLog("y");
      for (const axis of ["x", "y"]) {
        const b = this.logButtons[axis], ok = this.canLog(axis);
        b.hidden = !ok && axis === "x" && !!spec.xcats;
        b.disabled = !ok;
        b.setAttribute("aria-pressed", String(axis === "x" ? xlog : ylog));
        b.title = ok ? "logarithmic " + axis + " axis" : "the data are not all positive";
      }
      const shown = v.series.map((s, i) => ({ s, i })).filter((e) => !this.hidden.has(e.s.name));
      const series = shown.map((e) => e.s);
      const xd = spec.xcats ? [-0.5, spec.xcats.length - 0.5]
        : domain(extent(allOf(series, ["x"]), xlog), spec.xdomain, xlog, spec.markers ? 0.04 : 0);
      const yd = domain(extent(allOf(series, ["y", "lo", "hi"]), ylog), v.ydomain, ylog, 0.04);
      const x0 = M.l, x1 = W - M.r, y0 = H - M.b, y1 = M.t;
      this.points = [];
      let marks = 0;
      if (xd && yd) {
        const X = scale(xd[0], xd[1], x0, x1, xlog), Y = scale(yd[0], yd[1], y0, y1, ylog);
        this.axes(X, Y, xd, yd, xlog, ylog);
        const clip = "clip-" + this.root.dataset.spec;
        const cp = sv("clipPath", { id: clip });
        cp.appendChild(sv("rect", { x: x0, y: y1 - 4, width: x1 - x0, height: y0 - y1 + 8 }));
        svg.appendChild(cp);
        const g = sv("g", { "clip-path": `url(#${clip})` });
        svg.appendChild(g);
        shown.forEach((e, k) => { marks += this.drawSeries(g, e.s, e.i, k, shown.length, X, Y); });
      } else {
        const t = sv("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "tl-empty" });
        t.textContent = "nothing to draw" + (series.length ? "" : ": every series is hidden");
        svg.appendChild(t);
      }
      this.axisLabels(v);
      this.drawLegend(v);
      this.root.dataset.rendered = "1";
      this.root.dataset.marks = String(marks);
      this.root.dataset.series = String(shown.length);
    }

    axes(X, Y, xd, yd, xlog, ylog) {
      const svg = this.svg, x0 = M.l, x1 = W - M.r, y0 = H - M.b, y1 = M.t;
      const grid = sv("g", { class: "tl-grid" }), labels = sv("g", { class: "tl-ticks" });
      const xt = this.spec.xcats ? this.spec.xcats.map((_, i) => i) : xlog ? logTicks(xd[0], xd[1]) : linTicks(xd[0], xd[1], 7);
      const step = Math.max(1, Math.ceil(xt.length / 12));
      xt.forEach((t, i) => {
        const px = X(t);
        grid.appendChild(sv("line", { x1: px, x2: px, y1: y0, y2: y1 }));
        if (i % step) return;
        const txt = sv("text", { x: px, y: y0 + 16, "text-anchor": "middle" });
        txt.textContent = this.spec.xcats ? this.spec.xcats[t] : fmt(t);
        labels.appendChild(txt);
      });
      const yt = ylog ? logTicks(yd[0], yd[1]) : linTicks(yd[0], yd[1], 6);
      for (const t of yt) {
        const py = Y(t);
        grid.appendChild(sv("line", { x1: x0, x2: x1, y1: py, y2: py }));
        const txt = sv("text", { x: x0 - 6, y: py + 4, "text-anchor": "end" });
        txt.textContent = fmt(t);
        labels.appendChild(txt);
      }
      svg.append(grid, labels, sv("rect", { x: x0, y: y1, width: x1 - x0, height: y0 - y1, class: "tl-frame" }));
    }

    axisLabels(v) {
      const xl = sv("text", { x: (M.l + W - M.r) / 2, y: H - 8, "text-anchor": "middle", class: "tl-label" });
      xl.textContent = this.spec.xlabel || "";
      const yl = sv("text", { transform: `translate(16 ${(H - M.b + M.t) / 2}) rotate(-90)`,
                              "text-anchor": "middle", class: "tl-label" });
      yl.textContent = v.ylabel || v.name || "";
      this.svg.append(xl, yl);
    }

    /** Draws one series (line or steps, markers, error bars); returns the points drawn. */
    drawSeries(g, s, i, k, count, X, Y) {
      const color = COLORS[i % COLORS.length], dash = DASHES[Math.floor(i / COLORS.length) % DASHES.length];
      const off = this.spec.dodge ? (k - (count - 1) / 2) * Math.min(5, 24 / count) : 0;
      const px = [], py = [];
      let d = "", pen = false, drawn = 0;
      for (let j = 0; j < s.x.length; j++) {
        const a = X(s.x[j]) + off, b = s.y[j] === null ? NaN : Y(s.y[j]);
        px.push(a);
        py.push(b);
        if (!isFinite(a) || !isFinite(b)) { pen = false; continue; }
        drawn++;
        if (!pen) d += `M${a.toFixed(1)} ${b.toFixed(1)}`;
        else if (s.step) d += `H${a.toFixed(1)}V${b.toFixed(1)}`;
        else d += `L${a.toFixed(1)} ${b.toFixed(1)}`;
        pen = true;
      }
      const line = sv("path", { d, fill: "none", stroke: color, "stroke-width": s.x.length > 400 ? 1 : 1.6, class: "tl-line" });
      if (dash) line.setAttribute("stroke-dasharray", dash);
      g.appendChild(line);
      if (s.lo) {
        let e = "";
        for (let j = 0; j < s.x.length; j++) {
          const lo = s.lo[j] === null ? NaN : Y(s.lo[j]), hi = s.hi[j] === null ? NaN : Y(s.hi[j]);
          if (!isFinite(px[j]) || !isFinite(lo) || !isFinite(hi)) continue;
          e += `M${px[j].toFixed(1)} ${lo.toFixed(1)}V${hi.toFixed(1)}` +
               `M${(px[j] - 3).toFixed(1)} ${lo.toFixed(1)}h6M${(px[j] - 3).toFixed(1)} ${hi.toFixed(1)}h6`;
        }
        g.appendChild(sv("path", { d: e, stroke: color, "stroke-width": 1.2, fill: "none" }));
      }
      if (this.spec.markers || (!s.step && s.x.length <= 40)) {
        for (let j = 0; j < px.length; j++) {
          if (isFinite(px[j]) && isFinite(py[j])) g.appendChild(sv("circle", { cx: px[j], cy: py[j], r: 2.8, fill: color }));
        }
      }
      this.points.push({ s, i, px, py, color });
      return drawn;
    }

    drawLegend(v) {
      const ul = this.legend;
      ul.replaceChildren();
      if (v.series.length > 2) {
        const li = el("li", { class: "tl-all" });
        for (const [label, hide] of [["show all", false], ["hide all", true]]) {
          const b = el("button", { type: "button" });
          b.textContent = label;
          b.addEventListener("click", () => {
            v.series.forEach((s) => (hide ? this.hidden.add(s.name) : this.hidden.delete(s.name)));
            this.draw();
          });
          li.appendChild(b);
        }
        ul.appendChild(li);
      }
      v.series.forEach((s, i) => {
        const off = this.hidden.has(s.name);
        const b = el("button", { type: "button", class: "tl-entry" + (off ? " off" : ""),
                                 "aria-pressed": String(!off), title: "click to hide or show" });
        const sw = sv("svg", { width: 22, height: 10, class: "tl-swatch" });
        const ln = sv("line", { x1: 1, x2: 21, y1: 5, y2: 5, stroke: COLORS[i % COLORS.length], "stroke-width": 2.5 });
        const dash = DASHES[Math.floor(i / COLORS.length) % DASHES.length];
        if (dash) ln.setAttribute("stroke-dasharray", dash);
        sw.appendChild(ln);
        const name = el("span");
        name.textContent = s.name;
        b.append(sw, name);
        b.addEventListener("click", () => {
          if (this.hidden.has(s.name)) this.hidden.delete(s.name); else this.hidden.add(s.name);
          this.draw();
        });
        const li = el("li");
        li.appendChild(b);
        ul.appendChild(li);
      });
    }

    /** Shows the values of the point nearest the pointer. */
    hover(ev) {
      const ctm = this.svg.getScreenCTM();
      if (!ctm || !this.points.length) return;
      const p = new DOMPoint(ev.clientX, ev.clientY).matrixTransform(ctm.inverse());
      let best = null, bd = NEAR * NEAR;
      for (const t of this.points) {
        for (let j = 0; j < t.px.length; j++) {
          const dx = t.px[j] - p.x, dy = t.py[j] - p.y, d = dx * dx + dy * dy;
          if (d < bd) { bd = d; best = { t, j }; }
        }
      }
      if (!best) { this.unhover(); return; }
      const { t, j } = best, s = t.s, spec = this.spec;
      if (!this.dot) this.dot = sv("circle", { r: 5, class: "tl-dot" });
      this.dot.setAttribute("cx", t.px[j]);
      this.dot.setAttribute("cy", t.py[j]);
      this.dot.setAttribute("stroke", t.color);
      this.svg.appendChild(this.dot);
      const lines = [s.name,
        `${spec.xlabel || "x"}: ${spec.xcats ? spec.xcats[s.x[j]] : fmt(s.x[j])}`,
        `${this.current.ylabel || this.current.name}: ${fmt(s.y[j])}`];
      if (s.lo) lines.push(`min – max: ${fmt(s.lo[j])} – ${fmt(s.hi[j])}`);
      if (s.n) lines.push(`runs: ${s.n[j]}`);
      this.tip.replaceChildren(...lines.map((text, k) => { const d = el(k ? "div" : "b"); d.textContent = text; return d; }));
      this.tip.hidden = false;
      const box = this.canvas.getBoundingClientRect();
      const left = ev.clientX - box.left, top = ev.clientY - box.top;
      this.tip.style.left = (left > box.width * 0.6 ? left - this.tip.offsetWidth - 12 : left + 12) + "px";
      this.tip.style.top = Math.max(0, top - this.tip.offsetHeight - 8) + "px";
    }

    unhover() {
      if (this.dot) this.dot.remove();
      this.tip.hidden = true;
    }
  }

  /** Sorts a table's body by a column when its header is clicked. */
  function sortable(table) {
    for (const th of table.querySelectorAll("th[data-col]")) {
      th.tabIndex = 0;
      th.title = "click to sort";
      const go = () => sortBy(table, +th.dataset.col, th);
      th.addEventListener("click", go);
      th.addEventListener("keydown", (e) => { if (e.key === "Enter") go(); });
    }
  }

  function sortBy(table, col, th) {
    const asc = th.getAttribute("aria-sort") !== "ascending";
    for (const h of table.querySelectorAll("th[aria-sort]")) h.removeAttribute("aria-sort");
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    const key = (r) => {
      const c = r.cells[col];
      if (!c) return "";
      return c.dataset.v !== undefined ? (c.dataset.v === "" ? NaN : parseFloat(c.dataset.v)) : c.textContent;
    };
    const body = table.tBodies[0];
    const rows = Array.from(body.rows).map((r) => [key(r), r]);
    rows.sort(([a], [b]) => {
      if (typeof a === "number" && typeof b === "number") {
        if (isNaN(a) || isNaN(b)) return isNaN(a) - isNaN(b); // missing values last
        return asc ? a - b : b - a;
      }
      const c = String(a).localeCompare(String(b), undefined, { numeric: true });
      return asc ? c : -c;
    });
    for (const [, r] of rows) body.appendChild(r);
  }

  function init() {
    let data;
    try {
      data = JSON.parse(document.getElementById("tl-data").textContent);
    } catch (e) {
      fail("reading the report's data", e);
      return;
    }
    for (const div of document.querySelectorAll(".tl-plot")) {
      try {
        const spec = data.plots[div.dataset.spec];
        if (!spec) throw new Error("no data for this plot");
        new Plot(div, spec);
      } catch (e) {
        div.dataset.rendered = "error";
        fail("plot " + div.dataset.spec, e);
      }
    }
    for (const t of document.querySelectorAll("table.tl-sortable")) sortable(t);
    document.body.dataset.ready = "1";
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
