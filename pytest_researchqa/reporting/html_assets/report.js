"use strict";
// The page builds every element with textContent: data from datasets, models and saved runs
// never becomes markup. State (filters, the open row) lives in the URL's hash, so a link
// shows the same view.
(function () {
  const $ = (id) => document.getElementById(id);
  // Bidi overrides and control characters from data would reorder or hide what a reader sees:
  // they are shown as visible code points instead.
  const clean = (text) => String(text).replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u200e\u200f\u202a-\u202e\u2066-\u2069]/g,
    (c) => `⟨U+${c.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}⟩`);
  const el = (tag, attrs, ...children) => {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v; else if (k === "text") node.textContent = clean(v); else node.setAttribute(k, clean(v));
    }
    for (const child of children) if (child !== null && child !== undefined) node.append(typeof child === "string" ? clean(child) : child);
    return node;
  };
  // A system named by a long import path may break after its dots, colons and underscores (a <wbr> each)
  // rather than widen the row lists past the window.
  const breakable = (name) => String(name ?? "").split(/(?<=[.:_])/).flatMap((part, i) => (i ? [el("wbr"), part] : [part]));
  const fmt = (v, d = 3) => (v === null || v === undefined) ? "—" : Number(v).toFixed(d);
  const LIMIT = 500; // rows drawn at once; the count says how many match
  let data, byKey = new Map(), marks = new Map();
  // Text symbols every common font has (emoji need an emoji font a CI runner's browser may lack).
  const CHECK_SYMBOL = { passed: "✓", failed: "✗", undecidable: "⚠" };

  async function load() {
    const packed = $("researchqa-data").textContent.trim();
    const bytes = Uint8Array.from(atob(packed), (c) => c.charCodeAt(0));
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return JSON.parse(await new Response(stream).text());
  }

  function state() {
    const params = new URLSearchParams(location.hash.slice(1));
    return Object.fromEntries(params.entries());
  }
  function setState(update) {
    const params = new URLSearchParams(location.hash.slice(1));
    for (const [k, v] of Object.entries(update)) { if (v === "" || v === null || v === undefined) params.delete(k); else params.set(k, v); }
    history.replaceState(null, "", "#" + params.toString());
    draw();
  }

  function summary() {
    const verdict = $("verdict");
    verdict.textContent = data.headline;
    verdict.className = "verdict " + data.verdict;
    const box = $("summary");
    box.append(el("h2", { text: "Leaderboard" }));
    // The board the terminal and the Markdown draw, in their order: tables (the first is the leaderboard
    // itself) and lines of text; indented lines are the items of the line before them.
    let list = null;
    data.board.forEach((part, n) => {
      if (part.text !== undefined) {
        const text = part.text;
        if (text.includes("\n")) { box.append(el("pre", { class: "muted", text })); list = null; return; }
        if (text.startsWith("  ") && list) { list.append(el("li", { text: text.trim() })); return; }
        if (text.startsWith("  ")) { list = el("ul", { class: "muted" }, el("li", { text: text.trim() })); box.append(list); return; }
        box.append(el("p", { class: text.startsWith("warning") ? "note" : "muted", text }));
        list = null;
        return;
      }
      list = null;
      if (part.title) box.append(el("h3", { text: part.title }));
      box.append(el("div", { class: "board-box" }, boardTable(part, n === 0 ? "leaderboard" : null)));
    });
    box.append(el("p", { class: "muted", text: data.coverage }));
    for (const note of data.notes) box.append(el("p", { class: "muted", text: note }));
    if (data.checks.length) {
      box.append(el("h2", { text: data.gated ? "Gates" : "Verdict" }));  // as the Markdown heads it
      box.append(el("ul", { class: "checks" }, ...data.checks.map((c) => el("li", { class: c.state, text: `${CHECK_SYMBOL[c.fails_run ? "failed" : c.state] || c.mark} ${c.message}` }))));
    }
    if (data.comparison) {  // the Markdown's "Against" section: each metric's change, then what was not paired
      box.append(el("h2", { text: `Against ${data.comparison.baseline}` }));
      if (data.comparison.table.rows.length) box.append(el("div", { class: "board-box" }, boardTable(data.comparison.table, "comparison")));
      box.append(lines(data.comparison.lines));
    }
    if (data.guards.length) {
      box.append(el("h2", { text: "Judge guards" }));
      for (const g of data.guards) box.append(el("p", { class: g.severity === "warning" ? "note" : "muted", text: g.message }));
    }
    if (data.breakdowns.length) {  // the terminal's "by question type" and "by domain" tables, as the Markdown's sections
      box.append(el("h2", { text: "Breakdowns" }));
      for (const t of data.breakdowns) box.append(el("h3", { text: "By " + t.title }), el("div", { class: "board-box" }, boardTable(t, null)));
    }
    if (data.figures.length) {
      // Images, not inline SVG: a figure's text (domains, system names) can never run as script.
      const figures = el("div", { class: "figures" });
      for (const f of data.figures) {
        const img = el("img", { alt: f.name, title: f.name });
        img.src = "data:image/svg+xml;base64," + btoa(unescape(encodeURIComponent(f.svg)));
        figures.append(img);
      }
      $("figures").append(el("details", {}, el("summary", { text: `Figures (${data.figures.length})` }), figures));
    }
  }

  // What a comparison paired and what not: rows only one run has, a changed dataset file (said, never silent).
  const lines = (texts) => el("ul", { class: "compared" }, ...texts.map((text) => el("li", { text })));

  // A metric's Δ against the baseline goes under its value, in the same cell, so the leaderboard of a
  // comparison is as wide as the one without; a cell a gate that did not pass is about is marked, its message
  // on hover (a breakdown's cells of a whole-dataset gate's metric are not what that gate measured).
  function boardTable(part, id) {
    const deltaOf = part.headers.map((h, i) => (i > 0 && h === "Δ " + part.headers[i - 1] ? i : -1));
    const shown = part.headers.map((h, i) => i).filter((i) => !deltaOf.includes(i));
    // A column of words (a breakdown's question type or domain, the comparison's metric) reads left-aligned.
    const words = part.headers.map((h, i) => i > 0 && part.rows.length > 0 && part.rows.every((row) => !/^[-+−]?[\d.∞]/.test(row[i]))
      && part.rows.some((row) => row[i] !== "—"));
    // Gates on the whole dataset mark the leaderboard; a gate on one question type, that type's row of the
    // by-type table (its second column the type).
    const byType = part.title === "question type";
    // Several gates may mark one cell (a threshold and a regression on one metric): each is kept.
    const gateCells = new Map();
    const mark = (key, g) => gateCells.set(key, [...(gateCells.get(key) || []), g]);
    for (const g of data.gate_cells || []) {
      // A regression marks the Δ under the value, or the value where the board has no Δ (a family's own board).
      const delta = g.delta && part.headers.includes("Δ " + g.label);
      if (id === "leaderboard" && !g.type) mark(`${g.system}\u241f${delta ? "Δ " : ""}${g.label}`, g);
      if (byType && g.type) mark(`${g.system}\u241f${g.type}\u241f${g.label}`, g);
    }
    const table = el("table", { id, class: "board" });
    table.append(el("thead", {}, el("tr", {}, ...shown.map((i) => {
      const th = el("th", { text: part.headers[i] });
      if (deltaOf[i + 1] > 0) th.append(el("div", { class: "delta", text: "Δ" }));
      return th;
    }))));
    const body = el("tbody");
    for (const row of part.rows) {
      body.append(el("tr", {}, ...shown.map((i) => {
        // A value and its interval ("0.565 [0.556–0.569]", "1.000 ±0.000") break between them, never inside.
        const td = !i ? el("td", {}, ...breakable(row[i])) : words[i] ? el("td", { text: row[i] })
          : el("td", { class: "num" }, ...String(row[i]).split(/ (?=[±[])/).flatMap((part, k) =>
            [...(k ? [" "] : []), el("span", { class: "nowrap", text: part })]));
        const d = deltaOf[i + 1] > 0 ? i + 1 : -1;
        if (d > 0) td.append(el("div", { class: "delta", text: row[d] }));
        const gates = [part.headers[i], ...(d > 0 ? [part.headers[d]] : [])].flatMap((key) =>
          gateCells.get(byType ? `${row[0]}\u241f${row[1]}\u241f${key}` : `${row[0]}\u241f${key}`) || []);
        if (gates.length) {
          // A failed gate outweighs an undecidable one on the same cell; the tooltip names every gate, failed first.
          const failed = gates.filter((g) => g.state === "failed");
          td.classList.add(failed.length ? "gate-failed" : "gate-undecidable");
          td.title = [...failed, ...gates.filter((g) => g.state !== "failed")].map((g) => g.message).join("\n");
        }
        return td;
      })));
    }
    table.append(body);
    return table;
  }

  function options(select, values, all) {
    select.append(el("option", { value: "", text: all }));
    for (const v of values) select.append(el("option", { value: v, text: v }));
  }
  const uniq = (f) => [...new Set(data.rows.map(f).filter((v) => v !== null && v !== undefined && v !== ""))].sort();

  function filters() {
    options($("f-system"), uniq((r) => r.system), "all systems");
    options($("f-type"), uniq((r) => r.type), "all types");
    options($("f-domain"), uniq((r) => r.domain), "all domains");
    options($("f-outcome"), uniq((r) => r.outcome), "any outcome");
    options($("f-metric"), data.metrics.map((m) => m.name), "no metric range");
    const bind = { "f-system": "system", "f-type": "type", "f-domain": "domain", "f-outcome": "outcome", "f-metric": "metric", "f-min": "min", "f-max": "max", "f-text": "q" };
    for (const [id, key] of Object.entries(bind)) $(id).addEventListener("input", () => setState({ [key]: $(id).value }));
    const head = el("tr", {}, el("th", { text: "row" }), el("th", { text: "system" }), el("th", { text: "type" }),
      el("th", { text: "domain" }), el("th", { text: "outcome" }), ...data.metrics.map((m) => el("th", { text: m.label })), el("th", { text: "why" }));
    $("rows").querySelector("thead").append(head);
  }

  function haystack(r) {
    if (r._text === undefined) {
      const d = r.details || {};
      r._text = [r.row_id, r.system, r.paper, d.question, d.answer, r.diagnosis, r.error, ...(r.citations || []).map((c) => c.quote)]
        .filter(Boolean).join("\n").toLowerCase();
    }
    return r._text;
  }

  function matching(s) {
    const q = (s.q || "").toLowerCase(), lo = s.min === undefined ? null : Number(s.min), hi = s.max === undefined ? null : Number(s.max);
    return data.rows.filter((r) => (!s.system || r.system === s.system) && (!s.type || r.type === s.type) &&
      (!s.domain || r.domain === s.domain) && (!s.outcome || r.outcome === s.outcome) &&
      (!s.metric || ((v) => v !== null && v !== undefined && (lo === null || v >= lo) && (hi === null || v <= hi))(r.metrics[s.metric])) &&
      (!q || haystack(r).includes(q)));
  }

  function draw() {
    const started = performance.now();
    const s = state();
    const bind = { system: "f-system", type: "f-type", domain: "f-domain", outcome: "f-outcome", metric: "f-metric", min: "f-min", max: "f-max", q: "f-text" };
    for (const [key, id] of Object.entries(bind)) if (document.activeElement !== $(id)) $(id).value = s[key] || "";
    const found = matching(s);
    $("count").textContent = `${found.length} of ${data.rows.length} rows` + (found.length > LIMIT ? ` (the first ${LIMIT} shown: narrow the filters)` : "");
    const body = document.createDocumentFragment();
    for (const r of found.slice(0, LIMIT)) {
      const tr = el("tr", { "data-row-id": r.row_id, "data-key": r.key },
        el("td", { text: r.row_id }), el("td", {}, ...breakable(r.system)), el("td", { text: r.type || "" }), el("td", { text: r.domain || "" }),
        el("td", {}, el("span", { class: "badge o-" + r.outcome, text: r.outcome || "" })),
        ...data.metrics.map((m) => el("td", { class: "num", text: fmt(r.metrics[m.name]) })),
        el("td", { text: (r.error || r.defect || (r.diagnosis || "").split("\n")[0] || "") }));
      tr.addEventListener("click", () => setState({ row: r.key }));
      body.append(tr);
    }
    const tbody = $("rows").querySelector("tbody");
    tbody.replaceChildren(body);
    rowPage(s.row ? byKey.get(s.row) : null);
    document.body.dataset.drawMs = (performance.now() - started).toFixed(1); // read by benchmarks/html_report.py
  }

  function highlighted(text, citations) {
    // The answer with each citation that appears in it marked, coloured by its verdict.
    const spans = [];
    citations.forEach((c, i) => {
      // The quote's words in order, whatever whitespace the answer put between them.
      const words = (c.quote || "").split(/\s+/).filter(Boolean).slice(0, 200);
      if (!words.length) return;
      const found = new RegExp(words.map((w) => w.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")).join("\\s+")).exec(text);
      if (!found) return;
      const at = found.index, end = at + found[0].length;
      if (!spans.some((s) => at < s.end && end > s.start)) spans.push({ start: at, end, c, i });
    });
    spans.sort((a, b) => a.start - b.start);
    const out = el("div", { class: "answer" });
    let pos = 0;
    for (const s of spans) {
      out.append(clean(text.slice(pos, s.start)));
      out.append(el("mark", { class: "cite " + kind(s.c), title: `[${s.i + 1}] ${s.c.verdict}`, text: text.slice(s.start, s.end) }));
      pos = s.end;
    }
    out.append(clean(text.slice(pos)));
    return out;
  }
  const kind = (c) => c.grounded ? "grounded" : (c.evidence === false ? "not_evidence" : "ungrounded");

  function review(target, label) {
    // One mark per thing judged: the reviewer picks the right value (prefilled with the machine's) and a note.
    const id = label.kind + "|" + label.system + "|" + label.row_id + "|" + (label.citation_index ?? label.dimension ?? label.item_index ?? label.system_b ?? "");
    const choice = el("select", { "aria-label": "right value" });
    for (const v of label.values) choice.append(el("option", { value: String(v), text: String(v) }));
    const note = el("input", { type: "text", placeholder: "note" });
    const saved = marks.get(id);
    choice.value = String(saved ? saved.human : label.judge);
    if (saved) note.value = saved.note || "";
    const save = () => {
      const human = label.values.includes(Number(choice.value)) ? Number(choice.value) : choice.value;
      const entry = { schema: data.labels_schema, kind: label.kind, system: label.system, row_id: label.row_id, run: data.run, judge: label.judge, human, note: note.value };
      for (const k of ["citation_index", "quote", "dimension", "item_index", "item", "system_a", "system_b", "judge_orders"]) if (label[k] !== undefined) entry[k] = label[k];
      marks.set(id, entry);
      $("review-count").textContent = `${marks.size} review mark(s)`;
      $("download-labels").disabled = marks.size === 0;
    };
    choice.addEventListener("change", save); note.addEventListener("change", save);
    target.append(el("div", { class: "review" }, "review: right value ", choice, " ", note));
  }

  function citationBlock(r, c, i) {
    const box = el("div", { class: "citation " + kind(c), "data-row-id": r.row_id });
    const pages = c.pages && c.pages.length ? ` · page ${c.pages.join(", ")}` : "";
    box.append(el("div", {}, el("strong", { text: `[${i + 1}] ${c.verdict}` }), el("span", { class: "muted", text: pages + (c.sections && c.sections.length ? " · reaches " + c.sections.join(", ") : "") })));
    box.append(el("pre", { text: c.quote || "" }));
    if (c.diff) {
      const diff = el("div", { class: "diff" }, el("div", { class: "label", text: "word diff against the paper" + (c.diff_page ? ` (page ${c.diff_page})` : "") + ": struck = only in the quote, green = the paper instead, grey = the paper going on" }));
      const line = el("pre");
      for (const [op, words] of c.diff) {
        line.append(op === "=" ? clean(words) : op === ">" ? el("span", { class: "goes-on", text: words })
          : el(op === "-" ? "del" : "ins", { text: words }));
        line.append(" ");
      }
      diff.append(line);
      box.append(diff);
    }
    if (c.explain) box.append(el("pre", { class: "muted", text: c.explain }));
    if (c.context) {
      box.append(el("div", { class: "label", text: "in the paper" }));
      box.append(el("pre", { class: "context" }, "…" + c.context[0], el("span", { class: "hit", text: c.context[1] }), c.context[2] + "…"));
    }
    review(box, { kind: "citation", system: r.system, row_id: r.row_id, citation_index: i, quote: c.quote, judge: kind(c), values: ["grounded", "ungrounded", "not_evidence"] });
    return box;
  }

  function rowDetail(r) {
    const d = r.details || {};
    const page = el("div", { "data-row-id": r.row_id });
    page.append(el("h2", { text: `${r.row_id} · ${r.system}` }));
    page.append(el("p", { class: "muted", text: [r.type, r.domain, r.paper, r.outcome].filter(Boolean).join(" · ") }));
    if (r.error) page.append(el("div", { class: "block" }, el("div", { class: "label", text: "error" }), el("pre", { text: r.error })));
    if (r.defect) page.append(el("div", { class: "block" }, el("div", { class: "label", text: "dataset defect" }), el("pre", { text: r.defect })));
    if (r.diagnosis) page.append(el("div", { class: "block" }, el("div", { class: "label", text: "diagnosis" }), el("pre", { text: r.diagnosis })));
    const metrics = el("div", { class: "block" }, el("div", { class: "label", text: "metrics" }),
      el("p", { text: data.metrics.map((m) => `${m.label} ${fmt(r.metrics[m.name])}`).join(" · ") + (r.latency_s !== null ? ` · ${fmt(r.latency_s, 2)} s` : "") + (r.cost_usd !== null && r.cost_usd !== undefined ? ` · $${fmt(r.cost_usd, 4)}` : "") + (r.judge_cost_usd !== null && r.judge_cost_usd !== undefined ? ` · verdicts $${fmt(r.judge_cost_usd, 4)}` : "") }));
    page.append(metrics);
    if (d.question || d.query) page.append(el("div", { class: "label", text: "question" }), el("p", { text: d.question || d.query }));
    if (d.false_premise) page.append(el("div", { class: "label", text: "false premise" }), el("p", { text: d.false_premise }));
    if (d.expected_answer) page.append(el("div", { class: "label", text: "expected answer" }), el("p", { text: d.expected_answer }));
    const answer = d.answer || d.text;
    if (answer !== undefined) {
      page.append(el("div", { class: "label", text: "answer" + (d.refused ? " (refused)" : "") }));
      page.append(el("div", { class: "block" }, highlighted(String(answer), r.citations || [])));
    }
    if (d.sections && d.sections.length) {
      page.append(el("div", { class: "label", text: "required sections" }));
      page.append(el("ul", { class: "sections" }, ...d.sections.map((s) => el("li", { class: s.covered ? "covered" : "missed", text: s.section }))));
    }
    if ((r.citations || []).length) {
      page.append(el("div", { class: "label", text: `citations (${r.citations.length})` }));
      r.citations.forEach((c, i) => page.append(citationBlock(r, c, i)));
    }
    if (d.expected && d.expected.length) {
      page.append(el("div", { class: "label", text: "expected evidence" }));
      for (const e of d.expected) page.append(el("div", { class: "block" }, el("strong", { text: e.section }), ...e.alternatives.map((a) => el("pre", { text: a }))));
    }
    const judge = r.judge || {};
    const byJudge = judge.by_judge || {};
    if (Array.isArray(d.items)) {
      page.append(el("div", { class: "label", text: "rubric items (coverage 0–4), with each judge's score and justification" }));
      d.items.forEach((item, n) => {
        const line = el("div", { class: "block" }, el("strong", { text: `${item.coverage ?? "—"} · ${item.kind || ""}` }), el("p", { text: item.text || "" }));
        for (const [name, scores] of Object.entries(byJudge)) {
          if (!scores || !Array.isArray(scores.items)) continue;
          const why = Array.isArray(scores.justifications) ? scores.justifications[n] : null;
          line.append(el("p", { class: "justification" }, el("strong", { text: `${name}: ${scores.items[n] ?? "—"}` }), " ", why || "(no justification)"));
        }
        if (item.coverage !== null && item.coverage !== undefined) review(line, { kind: "coverage", system: r.system, row_id: r.row_id, item_index: n, item: item.text, judge: item.coverage, values: [0, 1, 2, 3, 4] });
        page.append(line);
      });
    }
    if (Object.keys(byJudge).length) {
      page.append(el("div", { class: "label", text: "judges" }));
      for (const [name, scores] of Object.entries(byJudge)) {
        const box = el("div", { class: "block" }, el("strong", { text: name }));
        if (scores && scores.error) box.append(el("pre", { text: scores.error }));
        const why = (scores && !Array.isArray(scores.justifications) && scores.justifications) || {};
        const items = scores && Array.isArray(scores.items) ? scores.items.length : 0;
        for (const [dim, value] of Object.entries(scores || {})) {
          if (typeof value !== "number") continue;
          const [lo, hi] = data.judge_scales[dim] || [1, 5];
          // A score over rubric items is their mean: each item is reviewed above, with its justification.
          const scale = items ? ` (the mean of ${items} items' ${lo}–${hi} scores; each is listed above)` : ` (${lo}–${hi})`;
          box.append(el("p", {}, el("strong", { text: `${dim}: ${items ? fmt(value, 2) : value}` }), scale, " ", why[dim] || ""));
          if (!items && Number.isInteger(value)) review(box, { kind: "judge", system: r.system, row_id: r.row_id, dimension: dim, judge: value, values: Array.from({ length: hi - lo + 1 }, (_, k) => lo + k) });
        }
        page.append(box);
      }
    }
    // The pairwise battles this answer was in (the rubric family): the direct judge in both orders, and the
    // ensemble's score, read from this answer's side; each can be reviewed as a pairwise label.
    const battles = (data.battles || []).filter((b) => b.row_id === r.row_id && (b.first === r.system || b.second === r.system));
    if (battles.length) {
      page.append(el("div", { class: "label", text: `pairwise battles (${battles.length})` }));
      for (const b of battles) {
        const mine = b.first === r.system;
        const other = mine ? b.second : b.first;
        const side = (choice, shownFirst) => choice === "tie" ? "tie" : ((choice === "A") === shownFirst ? "this answer" : other);
        const orders = [side(b.orders[0], mine), side(b.orders[1], !mine)];
        const score = mine ? b.score : 1 - b.score;
        const box = el("div", { class: "block" }, el("strong", { text: `vs ${other}: ${score === 1 ? "won" : score === 0 ? "lost" : "tie"}` }),
          el("p", { class: "justification", text: `${b.judge} preferred ${orders[0]} with this answer shown ${mine ? "first" : "second"}, ` +
            `${orders[1]} with it shown ${mine ? "second" : "first"}; the ensemble (with coverage) scores this answer ${fmt(score, 1)}` }));
        const asLabel = (choice, shownFirst) => choice === "tie" ? "tie" : ((choice === "A") === shownFirst ? "a" : "b");
        const judgeOrders = [asLabel(b.orders[0], mine), asLabel(b.orders[1], !mine)];
        review(box, { kind: "pairwise", system: r.system, row_id: r.row_id, system_a: r.system, system_b: other,
                      judge: judgeOrders[0] === judgeOrders[1] ? judgeOrders[0] : "tie", judge_orders: judgeOrders, values: ["a", "b", "tie"] });
        page.append(box);
      }
    }
    return page;
  }

  function rowPage(r) {
    const aside = $("row-page");
    if (!r) { aside.hidden = true; aside.replaceChildren(); return; }
    const close = el("button", { type: "button", class: "close", text: "close ✕" });
    close.addEventListener("click", () => setState({ row: "" }));
    aside.replaceChildren(close, rowDetail(r));
    aside.hidden = false;
  }

  // One side of a changed row: the answer, then each citation's verdict and quote, which is often all that
  // changed (the same answer text citing another passage).
  function changedCell(r) {
    const cell = el("td", { class: "side-text" });
    if (!r) return cell;
    cell.append(el("div", { text: (r.details || {}).answer || "" }));
    const cites = r.citations || [];
    if (cites.length) {
      const list = el("ul", { class: "changed-cites" });
      cites.forEach((c, i) => {
        const quote = c.quote || "";
        const reach = c.sections === undefined ? "" : (c.sections.length ? ` · reaches ${c.sections.join(", ")}` : " · reaches no expected section");
        list.append(el("li", { class: "cite " + kind(c), text: `[${i + 1}] ${c.verdict}${reach}: ${quote.length > 140 ? quote.slice(0, 140) + "…" : quote}` }));
      });
      cell.append(list);
    }
    return cell;
  }

  function compare() {
    if (!data.compare) return;
    const box = $("compare");
    box.hidden = false;
    const changed = data.compare.changed;
    const shown = changed.length > LIMIT ? ` (the ${LIMIT} that changed most shown)` : "";
    box.append(el("h2", { text: `Changed against ${data.compare.baseline}: ${changed.length} row(s)${shown}` }));
    if (data.compare.lines.length) box.append(lines(data.compare.lines));
    if (!changed.length) {  // a header over no row reads as a table that failed to load
      box.append(el("p", { class: "note", text: "No row of a system in both runs changed its metrics." }));
      return;
    }
    const table = el("table", { id: "changed" });
    table.append(el("thead", {}, el("tr", {}, el("th", { text: "row" }), el("th", { text: "system" }), el("th", { text: "change" }), el("th", { text: "this run" }), el("th", { text: "baseline" }))));
    const body = el("tbody");
    for (const c of changed.slice(0, LIMIT)) {
      const now = byKey.get(c.key);
      const tr = el("tr", { "data-row-id": now ? now.row_id : c.old.row_id },
        // This run's system; the baseline's beside it where --researchqa-compare-map paired another.
        el("td", {}, ...breakable(c.old.row_id)), el("td", {}, ...breakable(now && now.system !== c.old.system
          ? `${now.system} (baseline: ${c.old.system})` : (now || c.old).system)),
        el("td", { text: Object.entries(c.deltas).map(([m, v]) => `${m} ${v > 0 ? "+" : ""}${v.toFixed(3)}`).join(", ") }),
        changedCell(now), changedCell(c.old));
      tr.addEventListener("click", () => setState({ row: c.key }));
      body.append(tr);
    }
    table.append(body);
    box.append(table);
  }

  $("download-labels").addEventListener("click", () => {
    const text = [...marks.values()].map((m) => JSON.stringify(m)).join("\n") + "\n";
    const link = el("a", { download: "researchqa-labels.jsonl" });
    link.href = URL.createObjectURL(new Blob([text], { type: "application/x-ndjson" }));
    document.body.append(link); link.click(); link.remove();
  });
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") setState({ row: "" }); });
  window.addEventListener("hashchange", draw);

  load().then((loaded) => {
    data = loaded;
    for (const r of data.rows) byKey.set(r.key, r);
    summary(); filters(); compare(); draw();
    document.body.dataset.ready = "1";
  }).catch((error) => { $("verdict").textContent = "this report could not be read: " + error; });
})();
