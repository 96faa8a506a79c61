#!/usr/bin/env bash
# Takes docs/images/tray.png: `perch tray` in a real panel, with its menu open
# and desktop notifications on screen, against a throw-away local server;
# then, beside it, tray-actions.png (an urgent notification with tags, a
# Markdown message and actions, shown under it in the menu), tray-signed-out.png
# (after `perch logout` in a terminal) and tray-offline.png (signed in again,
# with the server stopped).
#
# Runs a virtual X display (Xvfb) with a D-Bus session (dbus-run-session),
# Xfce's panel (its systray plugin hosts StatusNotifierItems) and dunst (the
# notification daemon). A development tool: CI does not run it.
#
# Needs, on Debian:
#   apt-get install -y xvfb xfce4-panel dunst dbus-x11 xdotool imagemagick curl
#
# Usage: scripts/tray-screenshot.sh [OUTPUT.png]   (default docs/images/tray.png;
#        the others go beside it, as OUTPUT-actions.png, OUTPUT-signed-out.png
#        and OUTPUT-offline.png)
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-docs/images/tray.png}")"

if [ -z "${PERCH_SCREENSHOT_INNER:-}" ]; then
  for tool in Xvfb dbus-run-session xfce4-panel dunst xdotool import curl go; do
    command -v "$tool" >/dev/null || { echo "missing $tool: see the header of $0" >&2; exit 1; }
  done
  work="$(mktemp -d)"
  trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
  go build -o "$work/perch" ./cmd/perch
  display=:$((90 + RANDOM % 100))
  Xvfb "$display" -screen 0 1024x600x24 -nolisten tcp >"$work/xvfb.log" 2>&1 &
  for _ in $(seq 50); do [ -e "/tmp/.X11-unix/X${display#:}" ] && break; sleep 0.1; done
  # A fresh home: the panel's and dunst's settings below, nobody else's.
  export HOME="$work/home" XDG_CONFIG_HOME="$work/home/.config" XDG_CACHE_HOME="$work/home/.cache"
  mkdir -p "$XDG_CONFIG_HOME"
  DISPLAY="$display" PERCH_SCREENSHOT_INNER="$work" PERCH_SCREENSHOT_OUT="$out" \
    dbus-run-session -- "$0"
  exit
fi

# Inside the session: $DISPLAY and $DBUS_SESSION_BUS_ADDRESS are set.
work="$PERCH_SCREENSHOT_INNER"
perch="$work/perch"
trap 'kill $(jobs -p) 2>/dev/null; wait 2>/dev/null' EXIT
log() { printf '== %s\n' "$*" >&2; }

# One panel along the top: the tray first (so that its icon is at a known
# place), then a spacer and a clock. Without a stored configuration the
# panel would ask which one to use.
panel="$XDG_CONFIG_HOME/xfce4/xfconf/xfce-perchannel-xml"
mkdir -p "$panel"
cat >"$panel/xfce4-panel.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<channel name="xfce4-panel" version="1.0">
  <property name="configver" type="int" value="2"/>
  <property name="panels" type="array">
    <value type="int" value="1"/>
    <property name="panel-1" type="empty">
      <property name="position" type="string" value="p=6;x=0;y=0"/>
      <property name="length" type="uint" value="100"/>
      <property name="position-locked" type="bool" value="true"/>
      <property name="size" type="uint" value="32"/>
      <property name="icon-size" type="uint" value="24"/>
      <property name="plugin-ids" type="array">
        <value type="int" value="1"/>
        <value type="int" value="2"/>
        <value type="int" value="3"/>
      </property>
    </property>
  </property>
  <property name="plugins" type="empty">
    <property name="plugin-1" type="string" value="systray">
      <property name="square-icons" type="bool" value="true"/>
    </property>
    <property name="plugin-2" type="string" value="separator">
      <property name="expand" type="bool" value="true"/>
      <property name="style" type="uint" value="0"/>
    </property>
    <property name="plugin-3" type="string" value="clock"/>
  </property>
</channel>
XML
mkdir -p "$XDG_CONFIG_HOME/dunst"
cat >"$XDG_CONFIG_HOME/dunst/dunstrc" <<'INI'
[global]
    origin = top-right
    offset = 12x44
    width = 320
    font = DejaVu Sans 9
    frame_width = 1
[urgency_low]
    timeout = 0
[urgency_normal]
    timeout = 0
[urgency_critical]
    timeout = 0
INI

xfce4-panel >"$work/panel.log" 2>&1 &
dunst >"$work/dunst.log" 2>&1 &

log "perch serve"
port=$((20000 + RANDOM % 20000))
base="http://127.0.0.1:$port"
PERCH_LISTEN="127.0.0.1:$port" PERCH_BASE_URL="$base" PERCH_DATABASE_URL="$work/perch.db" \
  "$perch" serve >"$work/serve.log" 2>&1 &
serve_pid=$!
for _ in $(seq 100); do curl -fs "$base/healthz" >/dev/null && break; sleep 0.1; done
curl -fs "$base/healthz" >/dev/null || { cat "$work/serve.log" >&2; exit 1; }

field() { grep -o "\"$1\":\"[^\"]*\"" | head -1 | cut -d'"' -f4; }
access=$(curl -fs "$base/api/v1/auth/register" -H 'Content-Type: application/json' \
  -d '{"name":"Ada Lovelace","email":"ada@example.com","password":"correct horse battery"}' | field access_token)
auth=(-H "Authorization: Bearer $access" -H 'Content-Type: application/json')
api_token=$(curl -fs "$base/api/v1/tokens" "${auth[@]}" -d '{"label":"tray"}' | field raw_token)
webhook=$(curl -fs "$base/api/v1/webhook-tokens" "${auth[@]}" \
  -d '{"label":"screenshot","sender":"inbound","scope":"user"}' | field raw_token)

log "perch login --token, perch tray"
export PERCH_CONFIG_DIR="$work/config"
"$perch" login --server "$base" --token "$api_token"
# The panel's tray owns org.kde.StatusNotifierWatcher once it is up.
for _ in $(seq 100); do
  dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus \
    org.freedesktop.DBus.NameHasOwner string:org.kde.StatusNotifierWatcher 2>/dev/null | grep -q true && break
  sleep 0.1
done
"$perch" tray >"$work/tray.log" 2>&1 &
sleep 3 # the tray registers its icon and connects

send() { curl -fs "$base/webhooks/inbound?token=$webhook" -H 'Content-Type: application/json' -d "$1"; }
send '{"tab":"Payments","title":"Payout of €1,240.00 sent","message":"Arrives Thursday","severity":"info"}' >/dev/null
send '{"tab":"Code","title":"perch#41 opened: desktop sign-in","message":"by grace","severity":"info"}' >/dev/null
send '{"tab":"Code","title":"perch#42 merged: tray menu","message":"by ada","severity":"info"}' >/dev/null
send '{"tab":"Monitoring","title":"Disk 91% on db-1","message":"/var/lib/postgresql","severity":"warning"}' >/dev/null
seen=$(send '{"tab":"Incidents","title":"#1286 Checkout latency above 2 s","message":"Acknowledged by grace","severity":"warning"}' |
  grep -o '"ids":\["[^"]*"' | cut -d'"' -f4)
send '{"tab":"Incidents","title":"#1287 API error rate above 5%","message":"Triggered by checkout-api, high urgency","severity":"error"}' >/dev/null
# Read on another device: the tray hears of it and shows it read.
curl -fs "$base/api/v1/notifications/read" "${auth[@]}" -d "{\"ids\":[\"$seen\"]}" >/dev/null
sleep 2

# menu opens the tray's menu (the icon is the panel's first item, at its
# left end); shoot writes the screen to $1 and closes the menu.
menu() { xdotool mousemove 16 16 click 1; sleep 2; }
shoot() {
  mkdir -p "$(dirname "$1")"
  import -window root "$1"
  log "wrote $1"
  xdotool key Escape; sleep 0.5
}
next_to() { printf '%s-%s.png' "${PERCH_SCREENSHOT_OUT%.png}" "$1"; }

log "open the menu"
menu
# Hover the first tab (the newest: Incidents) to open its submenu.
xdotool mousemove 60 70
sleep 1.5
shoot "$PERCH_SCREENSHOT_OUT"
xdotool key Escape; sleep 0.5

log "a rich notification: its actions under it in the menu"
send '{"tab":"Incidents","title":"#1288 Checkout error rate above 5%","severity":"error","priority":"urgent",
  "tags":["rotating_light","prod"],"markdown":true,"message":"Error rate **7.2%** on `checkout-api`",
  "actions":[{"type":"view","label":"Open runbook","url":"https://runbooks.example.com/checkout"},
             {"type":"http","label":"Roll back","url":"https://deploy.example.com/rollback","method":"POST"}]}' >/dev/null
sleep 2
menu
xdotool mousemove 60 70
sleep 1.5
shoot "$(next_to actions)"
xdotool key Escape; sleep 0.5

log "perch logout: the tray shows itself signed out"
"$perch" logout --server "$base" >/dev/null
sleep 3
menu
shoot "$(next_to signed-out)"

log "perch login again, then stop the server: the tray is offline"
"$perch" login --server "$base" --token "$api_token" >/dev/null
sleep 4 # the tray notices the sign-in, connects and fetches the history
kill "$serve_pid"; wait "$serve_pid" 2>/dev/null || true
sleep 4 # the tray notices and tries again
menu
shoot "$(next_to offline)"
if grep -q . "$work/tray.log"; then log "perch tray said:"; cat "$work/tray.log" >&2; fi
