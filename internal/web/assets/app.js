// Perch dashboard: copy buttons, confirmations and the live notification
// feed. Plain JavaScript, no build step. Everything the server sends is put
// on the page as text, never as HTML, with one exception: a Markdown
// message, which the dashboard's own routes render and sanitise on the
// server (/feed/history, /feed/notifications/{id}/body) and this script
// puts on the page as they made it.
"use strict";

document.addEventListener("click", (e) => {
  const b = e.target.closest("[data-copy]");
  if (!b) return;
  const text = document.getElementById(b.dataset.copy).textContent.trim();
  const done = () => { b.textContent = "Copied"; setTimeout(() => (b.textContent = "Copy"), 1500); };
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(text).then(done);
  } else {
    const t = document.createElement("textarea");
    t.value = text; document.body.appendChild(t); t.select();
    document.execCommand("copy"); t.remove(); done();
  }
});

// The setup link ({base}/setup#code=pst_…): the code is in the fragment, so
// that no request carries it. It is kept in this tab's sessionStorage, out
// of the address bar, so that it survives a sign-in or sign-up on the way
// (and a renewal of the session, whose page this is too, before its form
// is sent below); the confirmation form takes it, and sending the form
// spends it.
if (location.pathname === "/setup") {
  const found = new URLSearchParams(location.hash.slice(1)).get("code");
  if (found) {
    sessionStorage.setItem("perch-setup-code", found);
    history.replaceState(null, "", location.pathname + location.search);
  }
  const form = document.getElementById("setup-form");
  if (form) {
    const code = sessionStorage.getItem("perch-setup-code");
    form.querySelector("#setup-code").value = code || "";
    form.querySelector("#setup-missing").hidden = Boolean(code);
    form.addEventListener("submit", () => sessionStorage.removeItem("perch-setup-code"));
  }
}

// A page that hands the browser on to a payment provider names the link
// to follow: it is followed at once (a form's redirect off the site is
// refused by the pages' CSP, following a link is not).
const follow = document.querySelector("a[data-follow]");
if (follow) window.location.assign(follow.href);

document.addEventListener("submit", (e) => {
  const msg = e.target.dataset.confirm;
  if (msg && !window.confirm(msg)) e.preventDefault();
});

// Every date on the dashboard is a <time datetime>: shown as an absolute
// time in the reader's time zone, with the relative time ("5 minutes ago")
// as its tooltip, renewed whenever the pointer comes over it.
const absolute = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
const relative = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

function ago(date) {
  const s = (date.getTime() - Date.now()) / 1000;
  for (const [unit, size] of [["year", 31536000], ["month", 2592000], ["week", 604800], ["day", 86400], ["hour", 3600], ["minute", 60]]) {
    if (Math.abs(s) >= size) return relative.format(Math.round(s / size), unit);
  }
  return relative.format(Math.round(s), "second");
}

function showTime(el) {
  const d = new Date(el.dateTime);
  if (isNaN(d)) return;
  el.textContent = absolute.format(d);
  el.title = ago(d);
}

// timeElement is the <time> for an RFC 3339 date from the API.
function timeElement(iso) {
  const el = document.createElement("time");
  el.dateTime = iso;
  showTime(el);
  return el;
}

for (const el of document.querySelectorAll("time[datetime]")) showTime(el);
document.addEventListener("mouseover", (e) => {
  const el = e.target.closest?.("time[datetime]");
  if (el) el.title = ago(new Date(el.dateTime));
});

// The header's menu button (phones): it is hidden until this script runs,
// so that without the script the navigation stays a scrollable row.
for (const header of document.querySelectorAll("header.top")) {
  const button = header.querySelector("[data-menu]");
  if (!button) continue;
  header.classList.add("has-menu");
  button.hidden = false;
  const set = (open) => { header.classList.toggle("open", open); button.setAttribute("aria-expanded", String(open)); };
  button.addEventListener("click", () => set(!header.classList.contains("open")));
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") set(false); });
  document.addEventListener("click", (e) => { if (!header.contains(e.target)) set(false); });
}

// api calls the JSON API with the session cookie; an expired access token is
// renewed once through /session/refresh.
async function api(method, path, body) {
  const send = () => fetch(path, {
    method, credentials: "same-origin",
    headers: body ? { "Content-Type": "application/json", "Accept": "application/json" } : { "Accept": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  let res = await send();
  if (res.status === 401 && await renew()) res = await send();
  if (res.status === 401) { location.href = "/signin?next=" + encodeURIComponent(location.pathname); return null; }
  if (!res.ok) throw new Error((await res.json().catch(() => ({}))).error?.message || res.statusText);
  return res.status === 204 ? null : (await res.json()).data;
}

async function renew() {
  const res = await fetch("/session/refresh", { method: "POST", credentials: "same-origin" });
  return res.ok;
}

// sourceNames are the receivers as people know them.
// (perch.SourceTitle says the same on the server's pages.)
const sourceNames = { inbound: "Inbound", incidents: "PagerDuty", "code-host": "GitHub", monitoring: "Datadog", "payments-a": "Stripe", "payments-b": "Paddle" };

// metaLine is what the line under a notification says, as [class, text]
// pairs: its severity, its tab, where it came from (unless that is what the
// tab already says) and who it is for, with teams (a Map of id → name) by
// name.
function metaLine(n, teams) {
  const parts = [["sevname", n.severity], ["tab", n.tab]];
  const source = sourceNames[n.source] || n.source;
  if (source && source.toLowerCase() !== String(n.tab).toLowerCase()) parts.push(["source", source]);
  const scope = n.scope || {};
  const to = { user: "you", org: "your organisation", all: "everyone" }[scope.type] ||
    (scope.type === "team" ? (teams.get(scope.id) || "a team") : "");
  if (to) parts.push(["scope", "for " + to]);
  return parts;
}

// tagEmoji is the server's table of tag shortcodes (perch.TagEmoji), from
// the page: a tag that is one shows as its emoji before the title, the
// others as chips.
const tagEmoji = (() => {
  const el = document.getElementById("tag-emoji");
  try { return el ? JSON.parse(el.textContent) : {}; } catch { return {}; }
})();

function emojiOf(tag) {
  let t = String(tag).trim().toLowerCase();
  if (t.length > 2 && t.startsWith(":") && t.endsWith(":")) t = t.slice(1, -1);
  return Object.hasOwn(tagEmoji, t) ? tagEmoji[t] : "";
}

// priorityNames are the priorities 1–5 in words; the feed badges high and
// urgent, and mutes min and low.
const priorityNames = ["", "min", "low", "default", "high", "urgent"];

function feed(root) {
  const list = root.querySelector("ol.feed");
  const tabsEl = root.querySelector(".tabs");
  const status = root.querySelector(".live");
  const empty = root.querySelector(".empty");
  const markAll = root.querySelector("[data-mark-all]");
  const items = new Map(); // id → notification
  const bodies = new Map(); // id → a Markdown message as the server rendered it
  const outcomes = new Map(); // "id/action" → what running an http action came to
  const expanded = new Set(); // ids whose whole message is shown
  const teams = new Map(); // team id → name
  let tab = "All", lastId = "", retry = 0;

  const num = (id) => BigInt(id);
  const setStatus = (state, text) => { status.dataset.state = state; status.textContent = text; };

  function add(n) {
    if (n.html !== undefined) { bodies.set(n.id, n.html); delete n.html; }
    items.set(n.id, n);
    if (!lastId || num(n.id) > num(lastId)) lastId = n.id;
    if (n.markdown && !bodies.has(n.id)) fetchBody(n.id);
  }

  // fetchBody asks the server for a Markdown message as HTML (a live
  // notification's: the history's come rendered); meanwhile it shows as
  // its text.
  async function fetchBody(id) {
    bodies.set(id, null);
    const get = () => fetch(`/feed/notifications/${encodeURIComponent(id)}/body`, { credentials: "same-origin" });
    try {
      let res = await get();
      if (res.status === 401 && await renew()) res = await get();
      if (!res.ok) { bodies.delete(id); return; }
      bodies.set(id, await res.text());
      render();
    } catch { bodies.delete(id); }
  }

  // runAction runs an http action through the dashboard and shows what the
  // target answered.
  async function runAction(n, a) {
    const key = n.id + "/" + a.id;
    outcomes.set(key, { running: true });
    render();
    try {
      const res = await api("POST", `/feed/notifications/${encodeURIComponent(n.id)}/actions/${encodeURIComponent(a.id)}`);
      outcomes.set(key, res ? { status: res.status, ok: res.ok } : { error: "not run" });
    } catch (e) {
      outcomes.set(key, { error: e.message });
    }
    render();
  }

  function render() {
    const all = [...items.values()].sort((a, b) => (num(b.id) > num(a.id) ? 1 : -1)).slice(0, 300);
    const unread = {};
    for (const n of all) if (!n.read) { unread[n.tab] = (unread[n.tab] || 0) + 1; unread.All = (unread.All || 0) + 1; }
    const tabs = ["All", ...[...new Set(all.map((n) => n.tab))].sort()];
    if (!tabs.includes(tab)) tab = "All";
    tabsEl.replaceChildren(...tabs.map((t) => {
      const b = document.createElement("button");
      b.type = "button"; b.setAttribute("aria-pressed", String(t === tab));
      b.append(t + " ");
      const c = document.createElement("span"); c.className = "count"; c.textContent = unread[t] || "";
      b.append(c);
      b.onclick = () => { tab = t; render(); };
      return b;
    }));
    const shown = all.filter((n) => tab === "All" || n.tab === tab);
    list.replaceChildren(...shown.map(item));
    showMoreWhereClamped();
    empty.hidden = shown.length > 0;
    markAll.disabled = !shown.some((n) => !n.read);
    document.title = (unread.All ? `(${unread.All}) ` : "") + "Notifications · Perch";
  }

  function item(n) {
    const li = document.createElement("li");
    const priority = priorityNames[n.priority] || "default";
    li.className = `${n.severity}${n.read ? " read" : ""} priority-${priority}`;
    li.dataset.id = n.id;
    const sev = document.createElement("span"); sev.className = "sev"; sev.setAttribute("aria-hidden", "true");
    const body = document.createElement("div"); body.className = "body";
    const head = document.createElement("div"); head.className = "head";
    if (n.icon && /^https:\/\//.test(n.icon)) {
      const icon = document.createElement("img");
      icon.className = "icon"; icon.src = n.icon; icon.alt = ""; icon.width = 32; icon.height = 32;
      icon.referrerPolicy = "no-referrer"; icon.loading = "lazy"; icon.decoding = "async";
      icon.onerror = () => icon.remove();
      head.append(icon);
    }
    const title = document.createElement("div"); title.className = "title";
    const tags = n.tags || [];
    const emoji = tags.map(emojiOf).join("");
    if (emoji) {
      const e = document.createElement("span"); e.className = "emoji"; e.textContent = emoji + " ";
      e.setAttribute("aria-hidden", "true");
      title.append(e);
    }
    title.append(n.title);
    head.append(title);
    if (priority === "high" || priority === "urgent") {
      const p = document.createElement("span"); p.className = "badge priority " + priority; p.textContent = priority === "urgent" ? "Urgent" : "High";
      head.append(p);
    }
    body.append(head);
    if (n.message) {
      const m = document.createElement("div"); m.className = "msg";
      const html = n.markdown ? bodies.get(n.id) : null;
      if (html) { m.classList.add("md"); m.innerHTML = html; } else m.textContent = n.message;
      m.id = "msg-" + n.id;
      if (!expanded.has(n.id)) m.classList.add("clamped");
      const more = document.createElement("button");
      more.type = "button"; more.className = "more quiet"; more.hidden = true;
      more.setAttribute("aria-controls", m.id);
      more.onclick = () => {
        const open = !expanded.has(n.id);
        if (open) expanded.add(n.id); else expanded.delete(n.id);
        m.classList.toggle("clamped", !open);
        more.textContent = open ? "Show less" : "Show more";
        more.setAttribute("aria-expanded", String(open));
      };
      more.textContent = expanded.has(n.id) ? "Show less" : "Show more";
      more.setAttribute("aria-expanded", String(expanded.has(n.id)));
      body.append(m, more);
    }
    const meta = document.createElement("div"); meta.className = "meta";
    for (const [cls, text] of metaLine(n, teams)) {
      const s = document.createElement("span"); if (cls) s.className = cls; s.textContent = text;
      meta.append(s);
    }
    if (priority === "min" || priority === "low") {
      const s = document.createElement("span"); s.className = "prio"; s.textContent = priority + " priority";
      meta.append(s);
    }
    meta.append(timeElement(n.created_at));
    const chips = tags.filter((t) => !emojiOf(t));
    if (chips.length) {
      const c = document.createElement("span"); c.className = "chips";
      for (const t of chips) { const chip = document.createElement("span"); chip.className = "chip"; chip.textContent = t; c.append(chip); }
      meta.append(c);
    }
    body.append(meta);
    const acts = (n.actions || []).filter((a) => a.type === "http" || (a.type === "view" && /^https?:\/\//.test(a.url || "")));
    if (acts.length) {
      const row = document.createElement("div"); row.className = "rich-actions";
      for (const a of acts) {
        if (a.type === "view") {
          const l = document.createElement("a"); l.href = a.url; l.textContent = a.label; l.target = "_blank"; l.rel = "noopener noreferrer";
          l.className = "button small secondary"; l.title = a.url; l.dataset.action = a.id;
          row.append(l);
          continue;
        }
        const o = outcomes.get(n.id + "/" + a.id);
        const b = document.createElement("button"); b.type = "button"; b.className = "small"; b.textContent = a.label;
        b.dataset.action = a.id; b.disabled = Boolean(o?.running);
        b.onclick = () => runAction(n, a);
        row.append(b);
        if (o && !o.running) {
          const s = document.createElement("span"); s.setAttribute("role", "status");
          s.className = "outcome " + (o.ok ? "ok" : "failed");
          s.textContent = o.error ? `${a.label}: ${o.error}` : o.ok ? `Done (${o.status})` : `Failed (${o.status})`;
          row.append(s);
        }
      }
      body.append(row);
    }
    const side = document.createElement("div"); side.className = "side actions";
    if (n.url && /^https?:\/\//.test(n.url)) {
      const a = document.createElement("a"); a.href = n.url; a.textContent = "Open"; a.target = "_blank"; a.rel = "noopener noreferrer";
      a.title = n.url;
      a.className = "button small secondary"; side.append(a);
    }
    if (!n.read) {
      const b = document.createElement("button"); b.type = "button"; b.className = "small secondary"; b.textContent = "Mark read";
      b.onclick = () => markRead([n.id]);
      side.append(b);
    }
    li.append(sev, body, side);
    return li;
  }

  // showMoreWhereClamped offers "Show more" on the messages the clamp cuts
  // short (and "Show less" on those opened); it reads every height before
  // it changes anything, so the page is laid out once.
  function showMoreWhereClamped() {
    const cut = [...list.querySelectorAll(".msg")].map((m) => [m, !m.classList.contains("clamped") || m.scrollHeight > m.clientHeight + 1]);
    for (const [m, offer] of cut) m.nextElementSibling.hidden = !offer;
  }

  async function markRead(ids) {
    if (!ids.length) return;
    for (const id of ids) { const n = items.get(id); if (n) n.read = true; }
    render();
    try { await api("POST", "/api/v1/notifications/read", { ids }); } catch (e) { setStatus("offline", e.message); }
  }

  markAll.onclick = () => markRead([...items.values()].filter((n) => !n.read && (tab === "All" || n.tab === tab)).map((n) => n.id));

  function connect() {
    const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws${lastId ? "?since=" + lastId : ""}`);
    let opened = false;
    ws.onopen = () => { opened = true; };
    ws.onmessage = (e) => {
      const f = JSON.parse(e.data);
      if (f.type === "notification") { add(f.data); render(); }
      else if (f.type === "read") { for (const id of f.data.ids) { const n = items.get(id); if (n) n.read = true; } render(); }
      else if (f.type === "ready") {
        retry = 0;
        if (f.data.last_id && (!lastId || num(f.data.last_id) > num(lastId))) lastId = f.data.last_id;
        // With nothing yet, resume from before the first: a reconnection
        // without since would replay nothing, and lose what came between.
        if (!lastId) lastId = "0";
        setStatus("live", f.data.gap ? "Live (older notifications were pruned)" : "Live");
      }
    };
    ws.onclose = async (e) => {
      // 1008: this sign-in was revoked (signed out here or elsewhere, or
      // the password changed): there is nothing to reconnect with.
      if (e.code === 1008) { setStatus("offline", "Signed out: sign in again to see new notifications."); return; }
      setStatus("offline", "Reconnecting…");
      // 4401: the access token ended; renew it at once.
      if (!opened || e.code === 4401) await renew().catch(() => false);
      const delay = Math.min(30000, 500 * 2 ** retry++) * (0.5 + Math.random() / 2);
      setTimeout(connect, delay);
    };
  }

  (async () => {
    setStatus("connecting", "Connecting…");
    try {
      const [history, orgTeams] = await Promise.all([
        api("GET", "/feed/history?limit=100"), // the API's history, Markdown rendered
        api("GET", "/api/v1/org/teams").catch(() => []), // without names, teams read "a team"
      ]);
      for (const t of orgTeams || []) teams.set(t.id, t.name);
      for (const n of history || []) add(n);
    } catch (e) { setStatus("offline", e.message); }
    render();
    connect();
  })();
}

const root = document.getElementById("feed");
if (root) feed(root);

// A page whose sign-in has expired renews it on the way (renew.html): its
// form is sent at once, before the page has finished loading, so that the
// renewal takes the page's place in the history.
for (const f of document.querySelectorAll("form[data-submit-at-once]")) f.submit();

// The workflow editor's "add a step": it appends the chosen step's example
// to the steps box's JSON list. It is hidden until this script runs; without
// it the JSON box alone is the editor.
for (const row of document.querySelectorAll("[data-add-step]")) {
  const choice = row.querySelector("select");
  const button = row.querySelector("[data-add-step-to]");
  const box = document.getElementById(button.dataset.addStepTo);
  const status = row.querySelector("[role=status]");
  row.hidden = false;
  button.addEventListener("click", () => {
    let steps;
    try {
      steps = box.value.trim() === "" ? [] : JSON.parse(box.value);
    } catch (e) {
      status.textContent = "The steps are not valid JSON yet: fix them first.";
      return;
    }
    if (!Array.isArray(steps)) {
      status.textContent = "The steps must be a JSON list: fix them first.";
      return;
    }
    steps.push(JSON.parse(choice.value));
    box.value = JSON.stringify(steps, null, 2);
    status.textContent = "Added: " + choice.selectedOptions[0].textContent + ".";
  });
}

// Time zones: a snooze until tomorrow morning is in the browser's, and the
// quiet hours' select lists every zone the browser knows, on the browser's
// when none is saved (without the script: the saved zone, or UTC).
const browserZone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
for (const el of document.querySelectorAll("input[data-browser-tz]")) el.value = browserZone;
for (const sel of document.querySelectorAll("select[data-time-zones]")) {
  const saved = sel.value;
  const zones = (Intl.supportedValuesOf ? Intl.supportedValuesOf("timeZone") : []).filter((z) => z !== saved);
  const chosen = "browserDefault" in sel.dataset ? browserZone : saved;
  const all = [...new Set([saved, "UTC", ...zones])].sort();
  sel.replaceChildren(...all.map((z) => { const o = document.createElement("option"); o.value = z; o.textContent = z; return o; }));
  sel.value = all.includes(chosen) ? chosen : saved;
}

// The API tokens form: the expiry date counts only with "On a date…", so
// it is shown only then (without the script it is always there).
for (const sel of document.querySelectorAll("select[name=expiry]")) {
  const box = sel.form.querySelector("[data-expiry-date]");
  if (!box) continue;
  const show = () => {
    box.hidden = sel.value !== "date";
    box.querySelector("input").required = sel.value === "date";
  };
  sel.addEventListener("change", show);
  show();
}
