// horde playground: draws what the server sends (map, fields, agents) and sends edits back.
// The server owns the simulation; see `horde serve --help` and the protocol in
// crates/horde-cli/src/playground/protocol.rs.
'use strict';

const WALL = 255;
const WALL_RGB = [34, 36, 44];
const GROUND_RGB = [232, 230, 220];
const UNREACHABLE_RGB = [150, 70, 160];
// Agents by state: moving (their group's colour), arrived, no path, stuck.
const ARRIVED = '#28c85a';
const NO_PATH = '#e62828';
const STUCK = '#faa000';
const GROUP_COLOURS = ['#1e78ff', '#e63cc8', '#00c8dc', '#f0dc28', '#8c5aff', '#ffffff', '#ff8caa', '#a06e3c'];
const VIRIDIS = [[68, 1, 84], [71, 44, 122], [59, 81, 139], [44, 113, 142], [33, 144, 141],
  [39, 173, 129], [92, 200, 99], [170, 220, 50], [253, 231, 37]];
// Direction bytes 0..7: N, NE, E, SE, S, SW, W, NW (y grows downwards).
const DX = [0, 1, 1, 1, 0, -1, -1, -1];
const DY = [-1, -1, 0, 1, 1, 1, 0, -1];
const UNREACHABLE = 4294967295;

const $ = (id) => document.getElementById(id);
const canvas = $('view');
const ctx = canvas.getContext('2d');

const S = {
  w: 0, h: 0, costs: null,
  terrain: document.createElement('canvas'),
  heat: document.createElement('canvas'),
  fields: [], // per group: { values: Uint32Array, flow: Uint8Array, max, seq }
  agents: { n: 0, x: new Float32Array(0), y: new Float32Array(0), state: new Uint8Array(0), group: new Uint8Array(0), radius: new Uint8Array(0) },
  groups: [],
  playing: false,
  view: { scale: 4, ox: 0, oy: 0 },
  group: 0,
  stroke: 0,
  // What needs drawing again: the agents over the background (dirty), or the background too
  // (bgDirty: terrain, cost to goal, arrows and goals, drawn once into `bg` and reused).
  dirty: true,
  bgDirty: true,
  bg: document.createElement('canvas'),
  limits: { max_upload_bytes: 8 << 20, max_side: 2048 },
};

// For tests and the curious: counters, the latest figures, and a way in.
const H = window.horde = {
  ready: false, mapFrames: 0, fieldFrames: 0, agentFrames: 0, errors: [], stats: null, state: null,
  repairLatencies: [], paintsSent: 0, paintsPending: () => pendingPaints.length, onAgents: null,
  send: (obj) => send(obj),
  agents: () => S.agents,
  costAt: (x, y) => S.costs ? S.costs[y * S.w + x] : undefined,
  // Page coordinates of a point given in cells (for driving the mouse).
  toPage: (cx, cy) => {
    const r = canvas.getBoundingClientRect();
    return { x: r.left + (cx - S.view.ox) * S.view.scale, y: r.top + (cy - S.view.oy) * S.view.scale };
  },
  view: () => ({ ...S.view }),
};

// ---- connection ----------------------------------------------------------------------------
let ws = null;
const pendingPaints = []; // send times of paints not yet answered by a field frame

function connect() {
  ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`);
  ws.binaryType = 'arraybuffer';
  ws.onmessage = (ev) => (typeof ev.data === 'string' ? onText(ev.data) : onFrame(ev.data));
  ws.onclose = (ev) => showMessage(`disconnected${ev.reason ? ': ' + ev.reason : ''} — reload to start again`);
}

function send(obj) {
  if (ws && ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(obj));
}

function onText(text) {
  let m;
  try { m = JSON.parse(text); } catch { return; }
  switch (m.t) {
    case 'hello': S.limits = m; break;
    case 'error': H.errors.push(m.message); showMessage(m.message); break;
    case 'stats': H.stats = m; showFigures(); break;
    case 'state':
      H.state = m;
      S.groups = m.groups;
      S.playing = m.playing;
      $('play').textContent = S.playing ? 'Pause' : 'Play';
      S.bgDirty = true;
      break;
    case 'map_file': download(new Blob([m.text], { type: 'text/plain' }), m.name); break;
  }
}

function onFrame(buf) {
  const dv = new DataView(buf);
  const tag = dv.getUint8(0);
  if (tag === 1) {
    const w = dv.getUint32(4, true), h = dv.getUint32(8, true);
    const x0 = dv.getUint32(12, true), y0 = dv.getUint32(16, true);
    const rw = dv.getUint32(20, true), rh = dv.getUint32(24, true);
    const fresh = w !== S.w || h !== S.h || !S.costs;
    if (fresh) {
      S.w = w; S.h = h;
      S.costs = new Uint8Array(w * h);
      S.fields = [];
    }
    const rows = new Uint8Array(buf, 28, rw * rh);
    for (let y = 0; y < rh; y++) S.costs.set(rows.subarray(y * rw, (y + 1) * rw), (y0 + y) * w + x0);
    if (fresh) {
      drawTerrain();
      drawHeat();
      fitView();
    } else if (rw > 0) {
      drawTerrain(x0, y0, rw, rh);
      drawHeat(x0, y0, rw, rh);
    }
    H.mapFrames++;
    H.ready = true;
  } else if (tag === 2) {
    const g = dv.getUint8(1), w = dv.getUint32(4, true), h = dv.getUint32(8, true);
    const x0 = dv.getUint32(16, true), y0 = dv.getUint32(20, true);
    const rw = dv.getUint32(24, true), rh = dv.getUint32(28, true);
    const cells = w * h;
    let f = S.fields[g];
    if (!f || f.values.length !== cells) {
      f = S.fields[g] = { values: new Uint32Array(cells).fill(UNREACHABLE), flow: new Uint8Array(cells).fill(9), max: -1 };
    }
    f.seq = dv.getUint32(12, true);
    // The rectangle's rows: costs, then arrows.
    const costs = new Uint32Array(buf, 32, rw * rh);
    const arrows = new Uint8Array(buf, 32 + 4 * rw * rh, rw * rh);
    for (let y = 0; y < rh; y++) {
      f.values.set(costs.subarray(y * rw, (y + 1) * rw), (y0 + y) * w + x0);
      f.flow.set(arrows.subarray(y * rw, (y + 1) * rw), (y0 + y) * w + x0);
    }
    let max = 0;
    for (let i = 0; i < cells; i++) { const v = f.values[i]; if (v !== UNREACHABLE && v > max) max = v; }
    const rescaled = max !== f.max;
    f.max = max;
    if (g === S.group && (rw > 0 || rescaled)) {
      if (rescaled) drawHeat(); else drawHeat(x0, y0, rw, rh);
    }
    const now = performance.now();
    for (const t of pendingPaints) H.repairLatencies.push(now - t);
    pendingPaints.length = 0;
    H.fieldFrames++;
  } else if (tag === 4) {
    download(new Blob([new Uint8Array(buf, 4)], { type: 'image/png' }), 'playground-map.png');
    return;
  } else if (tag === 3) {
    const n = dv.getUint32(4, true);
    let at = 8;
    const a = S.agents;
    a.n = n;
    a.x = new Float32Array(buf, at, n); at += 4 * n;
    a.y = new Float32Array(buf, at, n); at += 4 * n;
    a.state = new Uint8Array(buf, at, n); at += n;
    a.group = new Uint8Array(buf, at, n); at += n;
    a.radius = new Uint8Array(buf, at, n);
    H.agentFrames++;
    frameTimes.push(performance.now());
    if (H.onAgents) H.onAgents(a);
    S.dirty = true;
    return;
  }
  S.bgDirty = true;
}

// ---- pictures of the layers ----------------------------------------------------------------
function terrainRgb(c) {
  if (c === WALL) return WALL_RGB;
  if (c === 1 || !$('layer-terrain').checked) return GROUND_RGB;
  const t = Math.log(c - 1) / Math.log(253);
  return [0, 1, 2].map((i) => Math.round([120, 200, 90][i] + ([215, 50, 40][i] - [120, 200, 90][i]) * t));
}

let terrainImage = null;
function drawTerrain(x0 = 0, y0 = 0, rw = S.w, rh = S.h) {
  if (!S.costs) return;
  if (S.terrain.width !== S.w || S.terrain.height !== S.h || !terrainImage) {
    S.terrain.width = S.w; S.terrain.height = S.h;
    terrainImage = S.terrain.getContext('2d').createImageData(S.w, S.h);
    x0 = 0; y0 = 0; rw = S.w; rh = S.h;
  }
  const lut = [];
  for (let c = 0; c < 256; c++) lut.push(terrainRgb(c));
  const data = terrainImage.data;
  for (let y = y0; y < y0 + rh; y++) {
    for (let i = y * S.w + x0, end = i + rw; i < end; i++) {
      const rgb = lut[S.costs[i]];
      data[4 * i] = rgb[0]; data[4 * i + 1] = rgb[1]; data[4 * i + 2] = rgb[2]; data[4 * i + 3] = 255;
    }
  }
  S.terrain.getContext('2d').putImageData(terrainImage, 0, 0, x0, y0, rw, rh);
  S.bgDirty = true;
}

const VIRIDIS_LUT = [];
function viridis(t) {
  const x = Math.min(Math.max(t, 0), 1) * 8;
  const i = Math.min(Math.floor(x), 7), f = x - i;
  return [0, 1, 2].map((k) => Math.round(VIRIDIS[i][k] + (VIRIDIS[i + 1][k] - VIRIDIS[i][k]) * f));
}

// The selected group's cost to its goal, coloured; only the rectangle given (all by default).
let heatImage = null;
function drawHeat(x0 = 0, y0 = 0, rw = S.w, rh = S.h) {
  const f = S.fields[S.group];
  if (S.heat.width !== S.w || S.heat.height !== S.h || !heatImage) {
    S.heat.width = S.w; S.heat.height = S.h;
    heatImage = S.heat.getContext('2d').createImageData(S.w, S.h);
    x0 = 0; y0 = 0; rw = S.w; rh = S.h;
  }
  const data = heatImage.data;
  const ok = f && f.values.length === S.w * S.h && S.costs;
  const scale = ok && f.max > 0 ? 255 / f.max : 0;
  for (let y = y0; y < y0 + rh; y++) {
    for (let i = y * S.w + x0, end = i + rw; i < end; i++) {
      let rgb = null;
      if (ok && S.costs[i] !== WALL) {
        const v = f.values[i];
        rgb = v === UNREACHABLE ? UNREACHABLE_RGB : VIRIDIS_LUT[Math.min(255, Math.round(v * scale))];
      }
      if (rgb) {
        data[4 * i] = rgb[0]; data[4 * i + 1] = rgb[1]; data[4 * i + 2] = rgb[2]; data[4 * i + 3] = 255;
      } else {
        data[4 * i + 3] = 0;
      }
    }
  }
  S.heat.getContext('2d').putImageData(heatImage, 0, 0, x0, y0, rw, rh);
  S.bgDirty = true;
}

for (let k = 0; k < 256; k++) VIRIDIS_LUT.push(viridis(k / 255));

// ---- the view ------------------------------------------------------------------------------
function resize() {
  const r = canvas.getBoundingClientRect();
  canvas.width = Math.max(1, Math.round(r.width));
  canvas.height = Math.max(1, Math.round(r.height));
  S.bgDirty = true;
}

function fitView() {
  const scale = Math.min(canvas.width / S.w, canvas.height / S.h);
  S.view.scale = scale;
  S.view.ox = -(canvas.width / scale - S.w) / 2;
  S.view.oy = -(canvas.height / scale - S.h) / 2;
  S.bgDirty = true;
}

function toCell(ev) {
  const r = canvas.getBoundingClientRect();
  return { x: (ev.clientX - r.left) / S.view.scale + S.view.ox, y: (ev.clientY - r.top) / S.view.scale + S.view.oy };
}

function draw() {
  S.dirty = false;
  if (S.bgDirty) drawBackground();
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.drawImage(S.bg, 0, 0);
  if (S.costs && $('layer-agents').checked) {
    const { scale, ox, oy } = S.view;
    drawAgents((x) => (x - ox) * scale, (y) => (y - oy) * scale, scale);
  }
}

function drawBackground() {
  S.bgDirty = false;
  if (S.bg.width !== canvas.width || S.bg.height !== canvas.height) {
    S.bg.width = canvas.width; S.bg.height = canvas.height;
  }
  const ctx = S.bg.getContext('2d');
  const { scale, ox, oy } = S.view;
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  ctx.fillStyle = '#15171c';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  if (!S.costs) return;
  ctx.imageSmoothingEnabled = false;
  ctx.setTransform(scale, 0, 0, scale, -ox * scale, -oy * scale);
  ctx.drawImage(S.terrain, 0, 0);
  if ($('layer-heat').checked && S.fields[S.group]) {
    ctx.globalAlpha = 0.55;
    ctx.drawImage(S.heat, 0, 0);
    ctx.globalAlpha = 1;
  }
  ctx.setTransform(1, 0, 0, 1, 0, 0);
  const sx = (x) => (x - ox) * scale, sy = (y) => (y - oy) * scale;
  // Cells in view.
  const x0 = Math.max(0, Math.floor(ox)), y0 = Math.max(0, Math.floor(oy));
  const x1 = Math.min(S.w, Math.ceil(ox + canvas.width / scale)), y1 = Math.min(S.h, Math.ceil(oy + canvas.height / scale));
  const f = S.fields[S.group];
  if ($('layer-arrows').checked && f && f.flow.length === S.w * S.h) {
    // One arrow per cell when cells are big enough, else one per block (its centre cell's).
    const block = Math.max(1, Math.ceil(12 / scale));
    const len = 0.38 * block * scale;
    ctx.strokeStyle = 'rgba(20, 22, 28, 0.85)';
    ctx.lineWidth = Math.max(1, Math.min(2, scale / 8));
    ctx.beginPath();
    for (let by = Math.floor(y0 / block) * block; by < y1; by += block) {
      for (let bx = Math.floor(x0 / block) * block; bx < x1; bx += block) {
        const cx = Math.min(bx + (block >> 1), S.w - 1), cy = Math.min(by + (block >> 1), S.h - 1);
        const d = f.flow[cy * S.w + cx];
        if (d > 7) continue;
        const px = sx(cx + 0.5), py = sy(cy + 0.5);
        const n = Math.hypot(DX[d], DY[d]);
        const ex = px + (DX[d] / n) * len, ey = py + (DY[d] / n) * len;
        ctx.moveTo(px - (DX[d] / n) * len * 0.6, py - (DY[d] / n) * len * 0.6);
        ctx.lineTo(ex, ey);
        const hx = (DX[d] / n) * len * 0.45, hy = (DY[d] / n) * len * 0.45;
        ctx.moveTo(ex - hx - hy * 0.6, ey - hy + hx * 0.6);
        ctx.lineTo(ex, ey);
        ctx.lineTo(ex - hx + hy * 0.6, ey - hy - hx * 0.6);
      }
    }
    ctx.stroke();
  }
  if ($('layer-goals').checked) {
    S.groups.forEach((g, k) => {
      for (const [gx, gy] of g.goals) {
        const s = Math.max(scale, 6);
        ctx.fillStyle = GROUP_COLOURS[k];
        ctx.strokeStyle = '#000';
        ctx.lineWidth = 1.5;
        ctx.fillRect(sx(gx + 0.5) - s / 2, sy(gy + 0.5) - s / 2, s, s);
        ctx.strokeRect(sx(gx + 0.5) - s / 2, sy(gy + 0.5) - s / 2, s, s);
      }
    });
  }
}

function drawAgents(sx, sy, scale) {
  const a = S.agents;
  // One path per colour: moving agents by group, the others by state.
  const paths = new Map();
  const path = (colour) => {
    let p = paths.get(colour);
    if (!p) { p = new Path2D(); paths.set(colour, p); }
    return p;
  };
  const w = canvas.width, h = canvas.height;
  for (let i = 0; i < a.n; i++) {
    const px = sx(a.x[i]), py = sy(a.y[i]);
    if (px < -4 || py < -4 || px > w + 4 || py > h + 4) continue;
    const st = a.state[i];
    const colour = st === 0 ? GROUP_COLOURS[a.group[i] & 7] : st === 1 ? ARRIVED : st === 2 ? NO_PATH : STUCK;
    const r = Math.max(1.5, (a.radius[i] / 100) * scale);
    const p = path(colour);
    if (r < 2.5) p.rect(px - r, py - r, 2 * r, 2 * r);
    else { p.moveTo(px + r, py); p.arc(px, py, r, 0, 2 * Math.PI); }
  }
  for (const [colour, p] of paths) {
    ctx.fillStyle = colour;
    ctx.fill(p);
  }
}

// ---- figures and messages ------------------------------------------------------------------
const frameTimes = [];
function showFigures() {
  const s = H.stats;
  if (!s) return;
  const now = performance.now();
  while (frameTimes.length && now - frameTimes[0] > 1000) frameTimes.shift();
  const fix = (v) => (v < 10 ? v.toFixed(2) : v.toFixed(1));
  $('figures').textContent =
    `map ${S.w}×${S.h}\n` +
    `field build  ${fix(s.build_ms)} ms\n` +
    `repair       ${fix(s.repair_ms)} ms\n` +
    `crowd step   ${fix(s.step_ms)} ms\n` +
    `agents       ${s.agents}\n` +
    `arrived      ${s.arrived}\n` +
    `stuck        ${s.stuck}\n` +
    `no path      ${s.no_path}\n` +
    `frames/s     ${frameTimes.length}`;
}

let messageTimer = 0;
function showMessage(text) {
  const m = $('message');
  m.textContent = text;
  m.hidden = false;
  clearTimeout(messageTimer);
  messageTimer = setTimeout(() => { m.hidden = true; }, 5000);
}

function download(blob, name) {
  const a = document.createElement('a');
  a.href = URL.createObjectURL(blob);
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

// ---- input ---------------------------------------------------------------------------------
const tool = () => document.querySelector('input[name=tool]:checked').value;
const num = (id) => Number($(id).value);
let drag = null;

function paintCost() {
  return { wall: WALL, open: 1, terrain: num('terrain') }[tool()];
}

function spawnAt(p) {
  send({ t: 'spawn', group: S.group, x: p.x, y: p.y, spread: num('spread'), count: num('count'), radius: num('radius'), speed: num('speed') });
}

canvas.addEventListener('contextmenu', (ev) => ev.preventDefault());
canvas.addEventListener('pointerdown', (ev) => {
  canvas.setPointerCapture(ev.pointerId);
  const p = toCell(ev);
  if (ev.button !== 0) { drag = { pan: true, x: ev.clientX, y: ev.clientY }; return; }
  const t = tool();
  if (t === 'goal') {
    send({ t: 'goal', group: S.group, x: p.x, y: p.y, add: ev.shiftKey });
    drag = { goal: true, shift: ev.shiftKey, cell: [Math.floor(p.x), Math.floor(p.y)] };
  } else if (t === 'spawn') {
    spawnAt(p);
    drag = { spawn: true, last: p };
  } else {
    S.stroke++;
    send({ t: 'paint', stroke: S.stroke, x0: p.x, y0: p.y, x1: p.x, y1: p.y, brush: num('brush'), cost: paintCost() });
    pendingPaints.push(performance.now());
    H.paintsSent++;
    drag = { paint: true, last: p };
  }
});
canvas.addEventListener('pointermove', (ev) => {
  if (!drag) return;
  const p = toCell(ev);
  if (drag.pan) {
    S.view.ox -= (ev.clientX - drag.x) / S.view.scale;
    S.view.oy -= (ev.clientY - drag.y) / S.view.scale;
    drag.x = ev.clientX; drag.y = ev.clientY;
    S.bgDirty = true;
  } else if (drag.paint) {
    if (Math.hypot(p.x - drag.last.x, p.y - drag.last.y) < 0.25) return;
    send({ t: 'paint', stroke: S.stroke, x0: drag.last.x, y0: drag.last.y, x1: p.x, y1: p.y, brush: num('brush'), cost: paintCost() });
    pendingPaints.push(performance.now());
    H.paintsSent++;
    drag.last = p;
  } else if (drag.goal && !drag.shift) {
    const cell = [Math.floor(p.x), Math.floor(p.y)];
    if (cell[0] === drag.cell[0] && cell[1] === drag.cell[1]) return;
    drag.cell = cell;
    if (cell[0] >= 0 && cell[1] >= 0 && cell[0] < S.w && cell[1] < S.h && S.costs[cell[1] * S.w + cell[0]] !== WALL) {
      send({ t: 'goal', group: S.group, x: p.x, y: p.y, add: false });
    }
  } else if (drag.spawn) {
    if (Math.hypot(p.x - drag.last.x, p.y - drag.last.y) < Math.max(1, num('spread'))) return;
    spawnAt(p);
    drag.last = p;
  }
});
const endDrag = () => { drag = null; };
canvas.addEventListener('pointerup', endDrag);
canvas.addEventListener('pointercancel', endDrag);
canvas.addEventListener('wheel', (ev) => {
  ev.preventDefault();
  const p = toCell(ev);
  const k = Math.exp(-ev.deltaY * 0.0015);
  const scale = Math.min(64, Math.max(0.1, S.view.scale * k));
  const r = canvas.getBoundingClientRect();
  S.view.ox = p.x - (ev.clientX - r.left) / scale;
  S.view.oy = p.y - (ev.clientY - r.top) / scale;
  S.view.scale = scale;
  S.bgDirty = true;
}, { passive: false });

window.addEventListener('keydown', (ev) => {
  if (ev.target instanceof HTMLInputElement && ev.target.type !== 'range' && ev.target.type !== 'radio' && ev.target.type !== 'checkbox') return;
  if ((ev.ctrlKey || ev.metaKey) && ev.key === 'z') { ev.preventDefault(); send({ t: 'undo' }); }
  else if (ev.key === ' ') { ev.preventDefault(); send({ t: S.playing ? 'pause' : 'play' }); }
});

// ---- panel ---------------------------------------------------------------------------------
GROUP_COLOURS.forEach((c, k) => {
  const b = document.createElement('button');
  b.style.background = c;
  b.title = `group ${k}`;
  b.dataset.group = k;
  if (k === 0) b.classList.add('active');
  b.onclick = () => {
    S.group = k;
    document.querySelectorAll('#groups button').forEach((x) => x.classList.toggle('active', Number(x.dataset.group) === k));
    drawHeat();
  };
  $('groups').appendChild(b);
});
for (const id of ['brush', 'terrain', 'sep-weight', 'sep-radius', 'passes', 'rate']) {
  const show = () => { $(`${id}-out`).textContent = $(id).value; };
  $(id).addEventListener('input', show);
  show();
}
function sendParams() {
  send({ t: 'params', separation_weight: num('sep-weight'), separation_radius: num('sep-radius'), collision_passes: num('passes'), steps_per_frame: num('rate') });
}
for (const id of ['sep-weight', 'sep-radius', 'passes', 'rate']) $(id).addEventListener('change', sendParams);
$('undo').onclick = () => send({ t: 'undo' });
$('play').onclick = () => send({ t: S.playing ? 'pause' : 'play' });
$('step').onclick = () => send({ t: 'step' });
$('clear').onclick = () => send({ t: 'clear' });
$('layer-terrain').onchange = () => drawTerrain();
for (const id of ['layer-heat', 'layer-arrows', 'layer-goals', 'layer-agents']) $(id).onchange = () => { S.bgDirty = true; };
$('generate').onclick = () => send({ t: 'generate', width: num('gen-w'), height: num('gen-h'), rooms: num('gen-rooms'), seed: num('gen-seed'), loops: num('gen-loops') });
$('save-map').onclick = () => send({ t: 'save' });
$('save-map-png').onclick = () => send({ t: 'save_png' });
$('save-png').onclick = () => canvas.toBlob((b) => download(b, 'playground.png'));
$('file').onchange = async () => {
  const file = $('file').files[0];
  if (!file) return;
  if (file.size > S.limits.max_upload_bytes) {
    showMessage(`${file.name} is ${file.size} bytes: at most ${S.limits.max_upload_bytes} (a ${S.limits.max_side}×${S.limits.max_side} map)`);
    return;
  }
  const bytes = new Uint8Array(await file.arrayBuffer());
  const out = new Uint8Array(bytes.length + 1);
  out[0] = file.name.toLowerCase().endsWith('.png') ? 0x50 : 0x4d; // 'P' or 'M'
  out.set(bytes, 1);
  if (ws) ws.send(out);
  $('file').value = '';
};

window.addEventListener('resize', () => { resize(); });
function loop() {
  if (S.dirty || S.bgDirty) {
    const t = performance.now();
    draw();
    H.drawMs = performance.now() - t;
    H.drawMsMax = Math.max(H.drawMsMax || 0, H.drawMs);
  }
  requestAnimationFrame(loop);
}
resize();
connect();
setInterval(showFigures, 500);
loop();
