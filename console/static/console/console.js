/* Sageport console: live updates by polling small JSON answers (bounded), log following, and
   a hand-written SVG line chart. No dependencies, no build step. */
"use strict";

const POLL_MS = 2000;
const MAX_POLLS = 1800;        // about an hour per page view, then updates pause (reload to resume)
const MAX_LOG_LINES = 5000;    // lines kept per stream on the page
const MAX_DRAWN_POINTS = 600;  // above this a chart draws the line without a marker per point

async function getJSON(url) {
  const response = await fetch(url, {headers: {"Accept": "application/json"}, credentials: "same-origin"});
  if (response.redirected || !response.ok) throw new Error(`${response.status} ${url}`);
  return response.json();
}

function setNote(text) {
  const note = document.querySelector("[data-live-note]");
  if (note) note.textContent = text;
}

function clock() {  // UTC, as every time on the console
  return new Date().toISOString().slice(11, 19) + " UTC";
}

/* A loop of at most MAX_POLLS ticks; `tick` returns false to stop. */
function poll(tick) {
  let count = 0;
  async function run() {
    count += 1;
    let again = true;
    try {
      again = await tick();
    } catch (error) {
      setNote("Live updates interrupted; retrying…");
    }
    if (again === false) return;
    if (count >= MAX_POLLS) {
      setNote("Live updates paused. Reload the page to resume.");
      return;
    }
    setTimeout(run, POLL_MS);
  }
  setTimeout(run, POLL_MS);
}

/* --- lists ---------------------------------------------------------------------------------- */

function followRows(table) {
  const body = table.querySelector("[data-rows]");
  poll(async () => {
    const data = await getJSON(table.dataset.liveRows);
    if (body.innerHTML !== data.html) body.innerHTML = data.html;
    setNote(data.running ? `Live · ${data.running} running · ${clock()}` : `Live · ${clock()}`);
    return true;
  });
}

/* --- logs ----------------------------------------------------------------------------------- */

/* A stream's panel: its tools (earlier lines, search over the whole stream, jump to the error,
   wrap, download) above the followed log. */
function streamPanel(container, name, url) {
  let pre = container.querySelector(`pre[data-stream="${CSS.escape(name)}"]`);
  if (pre) return pre;
  const empty = container.querySelector("[data-no-logs]");
  if (empty) empty.remove();
  const section = document.createElement("section");
  section.className = "log-stream";
  const title = document.createElement("h3");
  title.textContent = name;
  pre = document.createElement("pre");
  pre.dataset.stream = name;
  pre.dataset.token = "";
  pre.tabIndex = 0;
  pre.setAttribute("aria-label", `Log of ${name}`);
  const results = document.createElement("div");
  results.className = "log-results";
  results.hidden = true;
  results.setAttribute("aria-label", `Search results in ${name}`);
  section.append(title, logTools(url, pre, results), results, pre);
  container.append(section);
  return pre;
}

function logTools(url, pre, results) {
  const name = pre.dataset.stream;
  const tools = document.createElement("div");
  tools.className = "log-tools";
  const earlier = button("Earlier lines", () => loadEarlier(url, pre, earlier));
  const form = document.createElement("form");
  form.setAttribute("role", "search");
  const input = document.createElement("input");
  input.type = "search";
  input.placeholder = "Search the whole log";
  input.setAttribute("aria-label", `Search the log of ${name}`);
  form.append(input, button("Find", null, "submit"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    if (input.value.trim()) searchStream(url, name, input.value.trim(), results);
  });
  const jump = button("Jump to the error", () => jumpToError(url, pre, results));
  const wrap = document.createElement("label");
  const box = document.createElement("input");
  box.type = "checkbox";
  box.checked = true;
  box.addEventListener("change", () => pre.classList.toggle("nowrap", !box.checked));
  wrap.append(box, " Wrap lines");
  const download = document.createElement("a");
  download.href = `${url}?${new URLSearchParams({stream: name, download: "1"})}`;
  download.textContent = "Download";
  download.setAttribute("download", "");
  tools.append(earlier, form, jump, wrap, download);
  return tools;
}

function button(text, onClick, type = "button") {
  const element = document.createElement("button");
  element.type = type;
  element.textContent = text;
  if (onClick) element.addEventListener("click", onClick);
  return element;
}

function logLine(event) {
  const line = document.createElement("span");
  line.className = "line";
  const time = document.createElement("time");
  time.dateTime = new Date(event.t).toISOString();
  time.textContent = new Date(event.t).toISOString().slice(11, 23);
  line.append(time, document.createTextNode(" " + event.m + "\n"));
  return line;
}

async function loadEarlier(url, pre, control) {
  const data = pre.dataset.back
    ? await getJSON(`${url}?${new URLSearchParams({stream: pre.dataset.stream, before: pre.dataset.back})}`)
    : {events: []};
  if (!data.events.length) {
    control.disabled = true;
    control.textContent = "Start of the log";
    return;
  }
  pre.dataset.back = data.back;
  const height = pre.scrollHeight;
  pre.prepend(...data.events.map(logLine));
  pre.scrollTop += pre.scrollHeight - height;  // the lines the reader was on stay in view
}

async function searchStream(url, name, text, results) {
  const data = await getJSON(`${url}?${new URLSearchParams({stream: name, q: text})}`);
  results.hidden = false;
  results.textContent = "";
  const note = document.createElement("p");
  note.className = "log-results-note";
  note.setAttribute("role", "status");
  const count = `${data.events.length}${data.more ? "+" : ""}`;
  const one = data.events.length === 1 && !data.more;
  note.textContent = data.events.length
    ? `${count} ${one ? "line holds" : "lines hold"} “${text}”` +
      (data.more ? ` (the first ${data.events.length} shown)` : "")
    : `No line holds “${text}”.`;
  const lines = document.createElement("pre");
  lines.className = "log-matches";
  lines.append(...data.events.map(logLine));
  results.append(note, lines);
}

// What a failure usually prints: a Python traceback or an exception's name, or an error line.
const ERROR_LINE = /\b(Traceback|[A-Za-z]*Error|[A-Za-z]*Exception|FATAL|fatal|ERROR)\b/;

function jumpToError(url, pre, results) {
  const line = [...pre.querySelectorAll(".line")].find((element) => ERROR_LINE.test(element.textContent));
  if (!line) return searchStream(url, pre.dataset.stream, "error", results);  // not among the lines shown
  pre.querySelectorAll(".line.hit").forEach((element) => element.classList.remove("hit"));
  line.classList.add("hit");
  pre.scrollTop = line.offsetTop - pre.offsetTop - 20;
  line.scrollIntoView({block: "nearest"});
}

async function followStream(url, pre) {
  // Read until the stream has nothing new (each answer is bounded), at most a few pages a tick.
  for (let page = 0; page < 5; page += 1) {
    const query = new URLSearchParams({stream: pre.dataset.stream, token: pre.dataset.token});
    const data = await getJSON(`${url}?${query}`);
    const unchanged = data.token === pre.dataset.token;
    // The first answer is the stream's last lines: "Earlier lines" pages back from its first. (A
    // first answer with none follows the stream from its start: there is nothing earlier.)
    if (!pre.dataset.token && data.events.length) pre.dataset.back = data.back;
    pre.dataset.token = data.token;
    if (data.events.length) appendLines(pre, data.events);
    if (unchanged || data.events.length === 0) return;
  }
}

function appendLines(pre, events) {
  const atBottom = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 40;
  const fragment = document.createDocumentFragment();
  for (const event of events) fragment.append(logLine(event));
  pre.append(fragment);
  while (pre.childElementCount > MAX_LOG_LINES) pre.firstElementChild.remove();
  if (atBottom) pre.scrollTop = pre.scrollHeight;  // follow, unless the reader scrolled up
}

/* --- charts --------------------------------------------------------------------------------- */

const SVG = "http://www.w3.org/2000/svg";

function svgElement(name, attributes) {
  const element = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) element.setAttribute(key, value);
  return element;
}

function formatValue(value) {
  return Math.abs(value) >= 1000 || (Math.abs(value) < 0.01 && value !== 0)
    ? value.toExponential(2) : String(Math.round(value * 1000) / 1000);
}

/* A chart of one or more lines ([{label, points: [[ms, value], ...]}]) on shared axes, with a
   legend when there are several (e.g. latency p50 and p99). `shape.bars`: counts, drawn as bars
   from zero; `shape.period`: the points' spacing in ms (a per-minute metric), where a missing
   point is a gap in the line, never a straight segment across it. */
function drawChart(figure, lines, shape = {}) {
  const body = figure.querySelector(".chart-body");
  body.textContent = "";
  const all = lines.flatMap((line) => line.points);
  figure.dataset.points = String(all.length);
  if (!all.length) {
    const empty = document.createElement("p");
    empty.className = "empty";
    empty.textContent = "No points yet.";
    body.append(empty);
    return;
  }
  const width = 600, height = 240, left = 64, right = 16, top = 14, bottom = 30;
  const times = all.map((p) => p[0]), values = all.map((p) => p[1]);
  let [t0, t1] = [Math.min(...times), Math.max(...times)];
  let [v0, v1] = [Math.min(...values), Math.max(...values)];
  if (shape.bars) { v0 = Math.min(0, v0); t1 += shape.period || 0; }  // a bar spans its period
  if (t0 === t1) { t0 -= 1000; t1 += 1000; }
  if (v0 === v1) { if (shape.bars) v1 += 1; else { v0 -= 1; v1 += 1; } }
  const x = (t) => left + ((t - t0) / (t1 - t0)) * (width - left - right);
  const y = (v) => top + (1 - (v - v0) / (v1 - v0)) * (height - top - bottom);
  const svg = svgElement("svg", {viewBox: `0 0 ${width} ${height}`, class: "chart-svg",
    "data-points": String(all.length), role: "presentation"});
  for (const v of [v0, (v0 + v1) / 2, v1]) {
    svg.append(svgElement("line", {x1: left, x2: width - right, y1: y(v), y2: y(v), class: "grid"}));
    const label = svgElement("text", {x: left - 6, y: y(v) + 4, class: "axis", "text-anchor": "end"});
    label.textContent = formatValue(v);
    svg.append(label);
  }
  for (const [t, anchor] of [[t0, "start"], [t1, "end"]]) {
    const label = svgElement("text", {x: x(t), y: height - 8, class: "axis", "text-anchor": anchor});
    label.textContent = new Date(t).toISOString().slice(11, 19) + "Z";
    svg.append(label);
  }
  lines.forEach((line, index) => {
    if (shape.bars) drawBars(svg, line, index, x, y, shape.period);
    else drawLine(svg, line, index, x, y, shape.period, all.length <= MAX_DRAWN_POINTS);
  });
  body.append(svg);
  if (lines.length > 1) body.append(legend(lines));
  const latest = lines.filter((line) => line.points.length)
    .map((line) => `${line.label} ${line.points[line.points.length - 1][1]}`.trim());
  body.setAttribute("aria-label", `${figure.dataset.chart}: ${all.length} points, latest ${latest.join(", ")}`);
  body.append(finalValues(lines));
}

/* Under a chart, each line's last value with its time, and its range: the numbers, not a reading
   of the drawing. */
function finalValues(lines) {
  const summary = document.createElement("p");
  summary.className = "chart-final";
  summary.textContent = lines.filter((line) => line.points.length).map((line) => {
    const [t, v] = line.points[line.points.length - 1];
    const values = line.points.map((point) => point[1]);
    const when = new Date(t).toISOString().slice(11, 19);
    return `${line.label ? `${line.label}: ` : ""}last ${formatValue(v)} at ${when}Z ` +
      `(min ${formatValue(Math.min(...values))}, max ${formatValue(Math.max(...values))})`;
  }).join(" · ");
  return summary;
}

function pointTitle(line, t, v) {
  const tip = svgElement("title", {});
  tip.textContent = `${new Date(t).toISOString().slice(11, 19)}Z  ${line.label ? `${line.label} ` : ""}${v}`;
  return tip;
}

function drawLine(svg, line, index, x, y, period, markers) {
  // A new subpath (M) after a missing period: the line breaks where there is no data.
  const steps = line.points.map(([t, v], at) => {
    const gap = at === 0 || (period && t - line.points[at - 1][0] > period * 1.5);
    return `${gap ? "M" : "L"}${x(t)},${y(v)}`;
  });
  svg.append(svgElement("path", {d: steps.join(" "), class: `series series-${index}`,
    "data-line": line.label, "data-points": String(line.points.length)}));
  if (!markers) return;
  for (const [t, v] of line.points) {
    const dot = svgElement("circle", {cx: x(t), cy: y(v), r: 4, class: `point point-${index}`});
    dot.append(pointTitle(line, t, v));
    svg.append(dot);
  }
}

function drawBars(svg, line, index, x, y, period) {
  const group = svgElement("g", {"data-line": line.label, "data-points": String(line.points.length)});
  for (const [t, v] of line.points) {
    const span = Math.max(2, (x(t + (period || 1000)) - x(t)) * 0.8);
    const bar = svgElement("rect", {x: x(t), y: Math.min(y(v), y(0)), width: span,
      height: Math.abs(y(0) - y(v)), class: `bar bar-${index}`});
    bar.append(pointTitle(line, t, v));
    group.append(bar);
  }
  svg.append(group);
}

function legend(lines) {
  const list = document.createElement("ul");
  list.className = "legend";
  lines.forEach((line, index) => {
    const item = document.createElement("li");
    const swatch = document.createElement("span");
    swatch.className = `swatch swatch-${index}`;
    swatch.setAttribute("aria-hidden", "true");
    item.append(swatch, document.createTextNode(line.label));
    list.append(item);
  });
  return list;
}

function drawCharts(root, series) {
  let any = false;
  for (const entry of series) {
    const figure = root.querySelector(`[data-chart="${CSS.escape(entry.name)}"]`);
    if (!figure) continue;
    const lines = entry.lines || [{label: "", points: entry.points}];  // one-line series (training)
    const drawn = lines.some((line) => line.points.length > 0);
    if (root.hasAttribute("data-hide-empty")) figure.hidden = !drawn;
    any = any || drawn;
    drawChart(figure, lines, {bars: entry.kind === "count", period: entry.period_ms});
  }
  const none = document.querySelector("[data-no-metrics]");
  if (none) none.hidden = any;
}

/* --- a resource's page ---------------------------------------------------------------------- */

function followResource(heading) {
  const logs = document.querySelector("[data-log-streams]");
  const charts = document.querySelector("[data-charts]");
  const parts = {
    status_html: document.querySelector("[data-status-html]"),
    timeline_html: document.querySelector("[data-timeline-html]"),
    fleet_html: document.querySelector("[data-fleet-html]"),
    history_html: document.querySelector("[data-history-html]"),
  };
  const actions = document.querySelector("[data-actions-html]");
  let state = heading.dataset.state || null;  // what the forms on the page were rendered for
  const FAILURE = '[data-testid="failure-reason"]';
  const failedAtLoad = document.querySelector(FAILURE) !== null;
  async function refresh() {
    const data = await getJSON(heading.dataset.live);
    if (actions && "state" in data && state !== null && data.state !== state) actions.innerHTML = data.actions_html;
    if ("state" in data) state = data.state;
    for (const [key, element] of Object.entries(parts)) {
      if (element && key in data && element.innerHTML !== data[key]) element.innerHTML = data[key];
    }
    // A failure that appeared since the page loaded (a rolled-back update) contradicts the green
    // "Deploying …" note of the action that led to it: the note goes, the red reason stays.
    if (!failedAtLoad && document.querySelector(FAILURE)) {
      document.querySelectorAll(".messages .message.success").forEach((element) => element.remove());
    }
    const url = heading.dataset.logs;
    for (const name of data.streams) await followStream(url, streamPanel(logs, name, url));
    if (charts) drawCharts(charts, (await getJSON(heading.dataset.metrics)).series);
    if (data.terminal) {
      document.querySelectorAll("[data-while-running]").forEach((element) => element.remove());
      setNote("");
      return false;  // this pass read the last lines and points: nothing changes any more
    }
    return true;
  }
  // The first look at once, then polling once it is done (never two passes reading one stream).
  refresh()
    .catch(() => true)
    .then((again) => { if (again !== false) poll(refresh); });
}

/* --- small things --------------------------------------------------------------------------- */

function wireForms() {
  document.querySelectorAll("form[data-confirm]").forEach((form) => {
    form.addEventListener("submit", (event) => {
      if (!window.confirm(form.dataset.confirm)) event.preventDefault();
    });
  });
  document.querySelectorAll("[data-copy]").forEach((button) => {
    button.addEventListener("click", () => copyFrom(button, document.getElementById(button.dataset.copy)));
  });
}

async function copyFrom(button, source) {
  try {
    await navigator.clipboard.writeText(source.textContent);
    button.textContent = "Copied";
  } catch (error) {  // no clipboard (plain http on another host): select it for Ctrl+C
    const range = document.createRange();
    range.selectNodeContents(source);
    window.getSelection().removeAllRanges();
    window.getSelection().addRange(range);
    button.textContent = "Selected: press Ctrl+C";
  }
}

/* Every ARN under a page's title gets a one-click copy. */
function wireArnCopies() {
  document.querySelectorAll("p.arn").forEach((paragraph) => {
    const arn = document.createElement("span");
    arn.textContent = paragraph.textContent.trim();
    const button = document.createElement("button");
    Object.assign(button, {type: "button", className: "copy-arn", textContent: "Copy ARN"});
    button.addEventListener("click", () => copyFrom(button, arn));
    paragraph.replaceChildren(arn, " ", button);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  wireArnCopies();
  wireForms();
  const table = document.querySelector("[data-live-rows]");
  if (table) followRows(table);
  const heading = document.querySelector("[data-live]");
  if (heading) followResource(heading);
});
