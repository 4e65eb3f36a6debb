// The console's page: reads the API the console serves (each answer a CLI
// command's own output) and draws it. No framework, no build step, no other
// host. Every call carries this run's token; no form data is asked for
// unless the operator asks on one receipt.
"use strict";

const token = document.querySelector('meta[name="console-token"]').content;
const $ = (selector) => document.querySelector(selector);
const STATUSES = ["COMPLETED", "RECEIVED", "FAILED", "QUARANTINED", "REFUSED", "DUPLICATE", "ERASED"];
const COLOURS = { COMPLETED: "#1e7b3a", RECEIVED: "#0b57d0", FAILED: "#b3261e", QUARANTINED: "#a15c00",
  REFUSED: "#6b2c91", DUPLICATE: "#5f6368", ERASED: "#202124" };
let shown = null;
let rows = [];
let lastDrawn = "";
let lastHeld = "";

async function api(path, options = {}) {
  const response = await fetch(path, {
    ...options,
    headers: { "X-Console-Token": token, "Content-Type": "application/json" },
  });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) throw new Error(body.error || `HTTP ${response.status}`);
  return body;
}

function text(tag, content, className) {
  const element = document.createElement(tag);
  element.textContent = content;
  if (className) element.className = className;
  return element;
}

function destinationsOf(receipt) {
  const lanes = receipt.destinations || {};
  const names = Object.keys(lanes);
  if (names.length) return names.map((name) => `${name}: ${lanes[name].state}`).join(", ");
  return receipt.deliveredTo || "";
}

function formOf(receipt) {
  return receipt.route || "";
}

// The inbox's pages: where each starts (null: the newest), the one shown last.
let pages = [null];
let older = null;

function filters() {
  return { status: $("#status").value, destination: $("#destination").value, form: $("#form").value,
    since: $("#since").value };
}

async function refresh() {
  const query = new URLSearchParams(filters());
  const start = pages[pages.length - 1];
  if (start) {
    query.set("olderAt", start.at);
    if (start.after) query.set("olderAfter", start.after);
  }
  let page;
  try {
    page = await api(`/api/receipts?${query}`);
  } catch (error) {
    $("#live").textContent = `Could not read the receipts: ${error.message}`;
    return;
  }
  rows = page.receipts;
  older = page.older;
  // Drawn again only when something changed: a row keeps its focus.
  const drawn = JSON.stringify(rows);
  if (drawn !== lastDrawn) {
    lastDrawn = drawn;
    $("#inbox tbody").replaceChildren(...rows.map(row));
    countSoon();
  }
  offer("#destination", rows.flatMap((r) => Object.keys(r.destinations || {}).concat(r.deliveredTo ? [r.deliveredTo] : [])));
  offer("#form", rows.map(formOf).filter(Boolean));
  $("#older").disabled = !older;
  $("#newer").disabled = pages.length === 1;
  const which = pages.length === 1 ? "the newest" : `page ${pages.length}`;
  $("#live").textContent = `${rows.length} receipt(s), ${which}, updated ${new Date().toLocaleTimeString()}`;
}

function restart() {
  pages = [null];
  refresh();
  count();
}

function row(receipt) {
  const tr = document.createElement("tr");
  tr.tabIndex = 0;
  tr.dataset.id = receipt.pk;
  tr.append(text("td", receipt.submissionId), text("td", receipt.status, `status-${receipt.status}`),
    text("td", receipt.receivedAt), text("td", formOf(receipt)), text("td", destinationsOf(receipt)));
  tr.addEventListener("click", () => open(receipt.pk, false));
  tr.addEventListener("keydown", (event) => { if (event.key === "Enter") open(receipt.pk, false); });
  return tr;
}

function offer(selector, values) {
  const select = $(selector);
  const known = new Set([...select.options].map((option) => option.value));
  for (const value of new Set(values)) {
    if (value && !known.has(value)) select.append(new Option(value, value));
  }
}

async function open(id, payload, keepSaid) {
  shown = id;
  if (!keepSaid) $("#said").textContent = "";
  const { card, receipt } = await api(`/api/receipt?${new URLSearchParams({ id, payload: payload ? "1" : "0" })}`);
  $("#card-section").hidden = false;
  $("#card-title").textContent = `Receipt ${receipt.submissionId}`;
  $("#card").textContent = card;
  $("#release").hidden = receipt.status !== "QUARANTINED";
  const failedLanes = Object.entries(receipt.destinations || {}).filter(([, lane]) => lane.state === "FAILED");
  $("#redrive").hidden = !(receipt.status === "FAILED" || failedLanes.length);
  $("#redrive").dataset.destination = failedLanes.length === 1 ? failedLanes[0][0] : "";
  $("#card-section").scrollIntoView({ block: "nearest" });
}

async function act(path, question, destination) {
  if (!shown || !window.confirm(question)) return;
  try {
    const body = { id: shown };
    if (destination) body.destination = destination;
    const answer = await api(path, { method: "POST", body: JSON.stringify(body) });
    $("#said").textContent = answer.said;
  } catch (error) {
    $("#said").textContent = error.message;
  }
  await open(shown, false, true);
  await refresh();
  await count();
}

// The period's counts: the chart, the table of counts, the quarantine.
let lastCounted = 0;
let countTimer = null;

// The counts follow a change of the inbox, at most every 5 seconds: each
// reads the whole period.
function countSoon() {
  if (countTimer) return;
  const wait = Math.max(0, 5000 - (Date.now() - lastCounted));
  countTimer = setTimeout(() => { countTimer = null; count(); }, wait);
}

async function count() {
  lastCounted = Date.now();
  let counts;
  try {
    counts = await api(`/api/counts?${new URLSearchParams({ since: $("#since").value })}`);
  } catch (error) {
    $("#chart-caption").textContent = `Could not count: ${error.message}`;
    return;
  }
  chart(counts);
  const lines = Object.entries(counts.byStatus).map(([status, n]) => [status, n]);
  const waiting = counts.waiting;
  if (waiting.error) {
    lines.push(["what waits now", `not read: ${waiting.error}`]);
  } else {
    lines.push(["waiting for an attempt now", waiting.pending]);
    lines.push(["oldest waiting (s)", waiting.oldestPendingAgeSeconds ?? "none"]);
    lines.push(["failed, waiting for you", waiting.failed]);
    lines.push(["notices waiting", waiting.notices]);
  }
  for (const [name, states] of Object.entries(counts.byDestination)) {
    lines.push([`to ${name}`, Object.entries(states).map(([state, n]) => `${n} ${state}`).join(", ")]);
  }
  $("#counts tbody").replaceChildren(...lines.map(([name, n]) => {
    const tr = document.createElement("tr");
    tr.append(text("th", String(name)), text("td", String(n)));
    return tr;
  }));
  quarantine(counts.quarantine);
}

function chart(counts) {
  const svg = $("#chart");
  const ns = "http://www.w3.org/2000/svg";
  const buckets = counts.buckets;
  $("#chart-caption").textContent = `Receipts ${counts.said}, by outcome`;
  const most = Math.max(1, ...buckets.map((b) => Object.values(b).reduce((a, c) => a + c, 0)));
  const width = 480 / buckets.length;
  const bars = [];
  buckets.forEach((bucket, index) => {
    let y = 150;
    for (const status of STATUSES) {
      const count = bucket[status] || 0;
      if (!count) continue;
      const height = (count / most) * 140;
      y -= height;
      const rect = document.createElementNS(ns, "rect");
      rect.setAttribute("x", String(index * width + 1));
      rect.setAttribute("y", String(y));
      rect.setAttribute("width", String(width - 2));
      rect.setAttribute("height", String(height));
      rect.setAttribute("fill", COLOURS[status]);
      rect.setAttribute("data-status", status);
      const title = document.createElementNS(ns, "title");
      title.textContent = `${count} ${status}`;
      rect.append(title);
      bars.push(rect);
    }
  });
  const axis = document.createElementNS(ns, "line");
  for (const [name, value] of [["x1", 0], ["y1", 150], ["x2", 480], ["y2", 150], ["stroke", "#4a5260"]]) {
    axis.setAttribute(name, String(value));
  }
  svg.replaceChildren(axis, ...bars);
  $("#legend").replaceChildren(...STATUSES.map((status) => text("span", `■ ${status}  `, `status-${status}`)));
}

function quarantine(held) {
  const drawn = JSON.stringify(held);
  if (drawn === lastHeld) return;
  lastHeld = drawn;
  $("#quarantine").replaceChildren(...held.map((receipt) => {
    const item = text("li", `${receipt.submissionId}: ${receipt.rule || "a spam rule"} `);
    const button = text("button", "Open");
    button.type = "button";
    button.addEventListener("click", () => open(receipt.pk, false));
    item.append(button);
    return item;
  }));
}

async function audit() {
  try {
    const { auditedUntil } = await api("/api/audit");
    $("#audit").textContent = auditedUntil
      ? `The scheduled audit has compared it with the receipts up to ${auditedUntil} (receipts audit says what is missing).`
      : "This stack has not audited its sender's list (receipts audit runs one).";
  } catch (error) {
    $("#audit").textContent = `Could not read the audit's state: ${error.message}`;
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const id of ["#status", "#destination", "#form", "#since"]) $(id).addEventListener("change", restart);
  $("#older").addEventListener("click", () => { if (older) { pages.push(older); refresh(); } });
  $("#newer").addEventListener("click", () => { if (pages.length > 1) { pages.pop(); refresh(); } });
  $("#release").addEventListener("click", () => act("/api/release", "Release this receipt from quarantine? The next pass delivers it.", ""));
  $("#redrive").addEventListener("click", () => act("/api/redrive", "Redrive this receipt? The next pass delivers it.", $("#redrive").dataset.destination));
  $("#payload").addEventListener("click", () => shown && open(shown, true));
  $("#close").addEventListener("click", () => { $("#card-section").hidden = true; shown = null; });
  refresh();
  count();
  audit();
  // The page shown, every few seconds; the period's counts, which read all
  // of its receipts, every minute.
  setInterval(refresh, 3000);
  setInterval(count, 60000);
});
