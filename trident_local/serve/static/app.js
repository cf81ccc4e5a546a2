// The web page: plain JS, no build step, no external requests. Every call goes to this server's /api.
"use strict";
const $ = (id) => document.getElementById(id);
const state = { index: null, docs: [], lastAsk: null, pageUrl: null };

function headers(extra = {}) {
  const key = sessionStorage.getItem("trident-key");
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

async function api(path, opts = {}) {
  const r = await fetch(path, { ...opts, headers: headers(opts.headers || {}) });
  const ct = r.headers.get("content-type") || "";
  const body = ct.includes("json") ? await r.json() : await r.blob();
  if (!r.ok) {
    if (r.status === 401) $("keybox").open = true;
    throw new Error(body.error || `HTTP ${r.status}`);
  }
  return body;
}

function setStatus(msg, isError = false) {
  $("status").textContent = msg;
  $("status").className = isError ? "error" : "";
}

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") e.className = v; else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

const base = () => `/api/indexes/${encodeURIComponent(state.index)}`;

async function loadIndexes() {
  const { indexes } = await api("/api/indexes");
  const sel = $("index");
  sel.replaceChildren(...indexes.map((i) => el("option", { value: i.name }, `${i.name} (${i.documents} docs)`)));
  state.index = sel.value || null;
  if (state.index) await Promise.all([loadDocs(), loadJobs()]);
}

async function loadDocs() {
  const { documents } = await api(`${base()}/documents`);
  state.docs = documents;
  const box = $("doclist");
  const ticked = new Set(selectedDocs());
  box.replaceChildren(box.querySelector("legend"), ...documents.map((d) => {
    const ready = d.stages && d.stages.ingest;
    const cb = el("input", { type: "checkbox", value: d.doc_id, "data-name": d.file_name });
    cb.checked = ticked.has(d.doc_id);
    return el("label", {}, cb,
      `${d.file_name} · ${d.n_pages} p.${ready ? "" : " (indexing)"}`);
  }));
  const keep = $("verify-doc").value;
  $("verify-doc").replaceChildren(...documents.map((d) => el("option", { value: d.doc_id }, d.file_name)));
  if (keep && documents.some((d) => d.doc_id === keep)) $("verify-doc").value = keep;
  const opt = $("index").selectedOptions[0];
  if (opt) opt.textContent = `${state.index} (${documents.length} docs)`;
}

function jobView(job) {
  const p = job.progress;
  const pct = p.pages_total ? Math.round((100 * p.pages_done) / p.pages_total) : 0;
  const eta = p.eta_s != null ? `, ETA ${Math.ceil(p.eta_s)} s` : "";
  const rate = p.pages_per_s ? `, ${p.pages_per_s.toFixed(2)} pages/s` : "";
  const failed = job.files.filter((f) => f.status === "failed");
  const div = el("div", { class: "job", id: `job-${job.job_id}`, "data-state": job.state },
    el("div", {}, `${job.kind} job ${job.job_id}: ${job.state} — ${p.files_done}/${p.files_total} files, ` +
      `${p.pages_done}/${p.pages_total} pages${rate}${eta}`),
    el("progress", { max: "100", value: String(pct), "aria-label": `job ${job.job_id} progress` }));
  for (const f of failed) div.append(el("div", { class: "error" }, `${f.name}: ${f.error}`));
  if (job.state === "queued" || job.state === "running") {
    div.append(el("button", { type: "button", onclick: () => api(`/api/jobs/${job.job_id}/cancel`, { method: "POST" }) }, "Cancel"));
  }
  return div;
}

function showJob(job) {
  const old = $(`job-${job.job_id}`);
  const view = jobView(job);
  if (old) old.replaceWith(view); else $("jobs").prepend(view);
}

async function follow(jobId) {
  // Server-sent events read through fetch, so the API key header goes along.
  const r = await fetch(`/api/jobs/${jobId}/events`, { headers: headers() });
  const reader = r.body.getReader();
  const dec = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += dec.decode(value, { stream: true });
    let i;
    while ((i = buf.indexOf("\n\n")) >= 0) {
      const chunk = buf.slice(0, i); buf = buf.slice(i + 2);
      const data = chunk.split("\n").find((l) => l.startsWith("data: "));
      if (data) { const job = JSON.parse(data.slice(6)); showJob(job); if (job.progress.files_done) loadDocs(); }
    }
  }
  await loadDocs();
}

async function loadJobs() {
  const { jobs } = await api(`/api/jobs?index=${encodeURIComponent(state.index)}`);
  $("jobs").replaceChildren();
  for (const j of jobs.slice(-5)) { showJob(j); if (j.state === "queued" || j.state === "running") follow(j.job_id); }
}

async function upload(ev) {
  ev.preventDefault();
  const files = $("files").files;
  if (!files.length) { setStatus("choose one or more PDFs first", true); return; }
  const form = new FormData();
  for (const f of files) form.append("file", f, f.name);
  setStatus(`uploading ${files.length} file(s)…`);
  try {
    const res = await api(`${base()}/documents`, { method: "POST", body: form });
    const notes = res.files.map((f) => `${f.name}: ${f.status}${f.error ? " — " + f.error : ""}`);
    setStatus(notes.join("; "));
    if (res.job) { showJob(res.job); follow(res.job.job_id); }
    $("files").value = "";
  } catch (e) { setStatus(e.message, true); }
}

function selectedDocs() {
  return [...$("doclist").querySelectorAll("input:checked")].map((i) => i.value);
}

async function ask(ev) {
  ev.preventDefault();
  const question = $("question").value.trim();
  if (!question) { setStatus("type a question", true); return; }
  $("ask").disabled = true;
  setStatus("asking…");
  try {
    const docs = selectedDocs();
    const res = await api(`${base()}/ask`, {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ question, docs: docs.length ? docs : null }),
    });
    state.lastAsk = res;
    renderAnswer(res);
    setStatus(`answered in ${res.timings.total.toFixed(2)} s`);
  } catch (e) { setStatus(e.message, true); } finally { $("ask").disabled = false; }
}

function citeButton(i) {
  return el("button", { type: "button", class: "cite", "aria-pressed": "false", "data-cite": String(i),
    "aria-label": `citation ${i + 1}`, onclick: () => showCitation(i) }, `[${i + 1}]`);
}

function renderAnswer(res) {
  const a = res.answer;
  const out = $("answer");
  const text = el("p", { class: "answer-text", id: "answer-text" }, a.text, " ", ...a.citations.map((_, i) => citeButton(i)));
  const list = el("ol", { class: "citations" }, ...a.citations.map((c, i) =>
    el("li", {}, citeButton(i), ` ${c.file_name}, page ${c.page}`, c.section ? ` — ${c.section}` : "")));
  const by = res.produced_by;
  const produced = el("dl", { class: "produced", id: "produced-by" },
    el("dt", {}, "retrieval"), el("dd", {}, by.retrieval),
    el("dt", {}, "rerank"), el("dd", {}, by.rerank),
    el("dt", {}, "answer"), el("dd", {}, by.answer + (a.gate ? ` (${a.gate})` : "")));
  const parts = [text];
  if (a.located) parts.push(el("p", { class: "hint", id: "answer-located" }, `where: ${a.located}`));
  if (a.computation) parts.push(el("p", { class: "hint", id: "answer-computation" }, `computed: ${a.computation}`));
  if (a.support) parts.push(el("p", { class: "hint" }, `support (page ${a.support_page}): ${a.support}`));
  for (const err of a.errors) parts.push(el("p", { class: "error" }, `model output problem: ${err}`));
  parts.push(list, produced);
  out.replaceChildren(...parts);
  // Prefill the verify box with this answer and its pages, ready to edit.
  if (a.citations.length) {
    const pages = [...new Set(a.citations.filter((c) => c.doc_id === a.citations[0].doc_id).map((c) => c.page))];
    $("verify-text").value = `${a.text} [p. ${pages.join(", ")}]`;
    $("verify-doc").value = a.citations[0].doc_id;
  }
}

async function showCitation(i) {
  const res = state.lastAsk;
  const c = res.answer.citations[i];
  const ev = res.evidence[i];
  document.querySelectorAll(".cite").forEach((b) => b.setAttribute("aria-pressed", String(b.dataset.cite === String(i))));
  await showPage(c.doc_id, c.page, `[${i + 1}] ${c.file_name}, page ${c.page}`, ev);
}

// Pages render at the screen's pixel density (up to 3x the index's DPI); zooming in asks for 3x.
function pageScale(zoomed) {
  return zoomed ? 3 : Math.min(3, Math.max(1, Math.round(window.devicePixelRatio || 1)));
}

async function loadPageImage(docId, page, scale) {
  const blob = await api(`${base()}/documents/${docId}/pages/${page}.png?scale=${scale}`);
  if (state.pageUrl) URL.revokeObjectURL(state.pageUrl);
  state.pageUrl = URL.createObjectURL(blob);
  $("page-img").src = state.pageUrl;
  state.page = { docId, page, scale };
}

async function toggleZoom() {
  const view = $("page-view");
  if (!state.page) return;
  const zoomed = view.classList.toggle("zoomed");
  if (zoomed && state.page.scale < 3) await loadPageImage(state.page.docId, state.page.page, 3);
  const box = document.querySelector("#boxes div");
  if (box) box.scrollIntoView({ block: "center", inline: "center" });
}

async function showPage(docId, page, caption, ev) {
  $("page-view").classList.remove("zoomed");
  await loadPageImage(docId, page, pageScale(false));
  const img = $("page-img");
  img.alt = `page ${page} of ${caption}`;
  $("page-caption").textContent = caption + (ev && ev.boxes.length ? ` — ${ev.boxes.length} evidence box(es)` : "");
  $("boxes").replaceChildren(...(ev ? ev.boxes : []).map((b) => {
    const [x0, y0, x1, y1] = b.bbox;
    const header = b.kind === "row-header" || b.kind === "column-header";
    const d = el("div", { class: header ? "box header" : "box", title: `${b.label || b.kind}: ${b.text || ""}` });
    d.style.left = `${(100 * x0) / ev.width}%`; d.style.top = `${(100 * y0) / ev.height}%`;
    d.style.width = `${(100 * (x1 - x0)) / ev.width}%`; d.style.height = `${(100 * (y1 - y0)) / ev.height}%`;
    return d;
  }));
  $("page-panel").scrollIntoView({ block: "nearest" });
}

async function verify(ev) {
  ev.preventDefault();
  const answer = $("verify-text").value.trim();
  if (!answer) { setStatus("paste an answer with page citations", true); return; }
  $("verify").disabled = true;
  setStatus("verifying…");
  try {
    const r = await api(`${base()}/verify`, {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ answer, doc: $("verify-doc").value }),
    });
    const rows = r.results.map((x) => el("tr", {},
      el("td", {}, x.claim.text), el("td", {}, String(x.cited_page)), el("td", {}, x.verdict),
      el("td", { class: x.action }, x.action + (x.new_page ? ` → p. ${x.new_page}` : ""))));
    const judges = Object.entries(r.judges).map(([k, v]) => `${k}: ${v}`).join(", ");
    $("verdicts").replaceChildren(
      el("table", { id: "verdict-table" }, el("tr", {}, el("th", {}, "claim"), el("th", {}, "page"),
        el("th", {}, "verdict"), el("th", {}, "action")), ...rows),
      el("p", { class: "produced" }, `judged by ${judges} (${r.model_calls} model calls)`),
      el("label", {}, "Corrected answer"),
      el("pre", { class: "corrected", id: "corrected" },
        typeof r.corrected_answer === "string" ? r.corrected_answer || "(every cited claim was removed)" : JSON.stringify(r.corrected_answer, null, 2)),
      ...r.warnings.map((w) => el("p", { class: "hint" }, w)));
    setStatus(`verified ${r.results.length} citation(s)`);
  } catch (e) { setStatus(e.message, true); } finally { $("verify").disabled = false; }
}

$("upload-form").addEventListener("submit", upload);
$("ask-form").addEventListener("submit", ask);
$("verify-form").addEventListener("submit", verify);
$("page-view").addEventListener("click", () => toggleZoom().catch((e) => setStatus(e.message, true)));
$("question").addEventListener("keydown", (e) => { if (e.key === "Enter" && e.ctrlKey) $("ask-form").requestSubmit(); });
$("index").addEventListener("change", async (e) => { state.index = e.target.value; await Promise.all([loadDocs(), loadJobs()]); });
$("savekey").addEventListener("click", () => {
  sessionStorage.setItem("trident-key", $("apikey").value.trim());
  $("keybox").open = false;
  loadIndexes().then(() => setStatus("key accepted"), (e) => setStatus(e.message, true));
});
loadIndexes().catch((e) => setStatus(e.message, true));
