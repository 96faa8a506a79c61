// Perch dashboard: copy buttons, confirmations and the live notification
// feed. Plain JavaScript, no build step. Everything the server sends is put
// on the page as text, never as HTML.
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

document.addEventListener("submit", (e) => {
  const msg = e.target.dataset.confirm;
  if (msg && !window.confirm(msg)) e.preventDefault();
});

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

function feed(root) {
  const list = root.querySelector("ol.feed");
  const tabsEl = root.querySelector(".tabs");
  const status = root.querySelector(".live");
  const empty = root.querySelector(".empty");
  const markAll = root.querySelector("[data-mark-all]");
  const items = new Map(); // id → notification
  let tab = "All", lastId = "", retry = 0;

  const num = (id) => BigInt(id);
  const setStatus = (state, text) => { status.dataset.state = state; status.textContent = text; };

  function add(n) {
    items.set(n.id, n);
    if (!lastId || num(n.id) > num(lastId)) lastId = n.id;
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
    empty.hidden = shown.length > 0;
    markAll.disabled = !shown.some((n) => !n.read);
    document.title = (unread.All ? `(${unread.All}) ` : "") + "Notifications · Perch";
  }

  function item(n) {
    const li = document.createElement("li");
    li.className = `${n.severity}${n.read ? " read" : ""}`;
    li.dataset.id = n.id;
    const sev = document.createElement("span"); sev.className = "sev"; sev.setAttribute("aria-hidden", "true");
    const body = document.createElement("div");
    const title = document.createElement("div"); title.className = "title"; title.textContent = n.title;
    body.append(title);
    if (n.message) { const m = document.createElement("div"); m.className = "msg"; m.textContent = n.message; body.append(m); }
    const meta = document.createElement("div"); meta.className = "meta";
    const s = document.createElement("span"); s.className = "sevname"; s.textContent = n.severity;
    const t = document.createElement("span"); t.textContent = n.tab;
    const src = document.createElement("span"); src.textContent = n.source;
    const when = document.createElement("time"); when.dateTime = n.created_at; when.textContent = new Date(n.created_at).toLocaleString();
    meta.append(s, t, src, when);
    body.append(meta);
    const side = document.createElement("div"); side.className = "side actions";
    if (n.url && /^https?:\/\//.test(n.url)) {
      const a = document.createElement("a"); a.href = n.url; a.textContent = "Open"; a.target = "_blank"; a.rel = "noopener noreferrer";
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
        setStatus("live", f.data.gap ? "Live (older notifications were pruned)" : "Live");
      }
    };
    ws.onclose = async (e) => {
      setStatus("offline", "Reconnecting…");
      if (!opened || e.code === 1008) await renew().catch(() => false); // 1008: the access token ended
      const delay = Math.min(30000, 500 * 2 ** retry++) * (0.5 + Math.random() / 2);
      setTimeout(connect, delay);
    };
  }

  (async () => {
    setStatus("connecting", "Connecting…");
    try {
      const history = await api("GET", "/api/v1/notifications?limit=100");
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
