// Drives `horde serve` in headless Chromium, as a user would, and prints what it saw as one
// JSON line for crates/horde-cli/tests/serve.rs to check.
//
// HORDE_WALL_URL: a server on an open 96 x 64 map. A wall is painted across the route with
// the mouse (column 48, rows 0-50; the gap is rows 51-63), a goal placed, 500 agents spawned;
// every agent frame is checked (no agent in a wall cell; no agent reaching the far side except
// through the gap), until all have arrived; then a screenshot.
// HORDE_BIG_URL: a server on a 512 x 512 map. 10,000 agents stream; frames per second are
// counted; then brush strokes are painted and the time from each stroke to the field frame
// that answers it is measured.
// CHROMIUM: the browser (default /usr/bin/chromium). OUT_DIR: where the screenshot goes.
import { chromium } from 'playwright-core';

const WALL_X = 48;
const WALL_END = 50; // last walled row
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const result = {};
try {
  // ---- the wall scene ------------------------------------------------------------------------
  const page = await browser.newPage({ viewport: { width: 1250, height: 720 } });
  page.on('pageerror', (e) => { result.pageErrors = (result.pageErrors || []).concat(String(e)); });
  await page.goto(process.env.HORDE_WALL_URL);
  await page.waitForFunction(() => window.horde && window.horde.ready && window.horde.state);
  const at = (cx, cy) => page.evaluate(([x, y]) => window.horde.toPage(x, y), [cx, cy]);

  await page.check('input[name=tool][value=wall]');
  let p = await at(WALL_X + 0.5, 0.2);
  await page.mouse.move(p.x, p.y);
  await page.mouse.down();
  for (let y = 1; y <= WALL_END; y += 1) {
    p = await at(WALL_X + 0.5, y + 0.5);
    await page.mouse.move(p.x, p.y, { steps: 2 });
  }
  await page.mouse.up();
  await page.waitForFunction(([x, end]) => {
    for (let y = 0; y <= end; y++) if (window.horde.costAt(x, y) !== 255) return false;
    return window.horde.costAt(x, end + 1) === 1;
  }, [WALL_X, WALL_END], { timeout: 10000 });

  await page.check('input[name=tool][value=goal]');
  p = await at(85.5, 10.5);
  await page.mouse.click(p.x, p.y);
  await page.waitForFunction(() => window.horde.state.groups[0].goals.length === 1);
  result.goal = (await page.evaluate(() => window.horde.state.groups[0].goals[0]));

  // Watch every agent frame from here on.
  await page.evaluate(([wx, end]) => {
    const h = window.horde;
    h.watch = { frames: 0, inWall: 0, jumps: 0, lastFar: 0, lastGap: 0, maxAgents: 0 };
    h.onAgents = (a) => {
      const w = h.watch;
      let far = 0, gap = 0;
      for (let i = 0; i < a.n; i++) {
        const x = a.x[i], y = a.y[i];
        if (h.costAt(Math.floor(x), Math.floor(y)) === 255) w.inWall++;
        if (x >= wx + 1) far++;
        if (x >= wx - 2.5 && x < wx + 3.5 && y >= end + 0.5) gap++;
      }
      // An agent walks under half a cell per frame: the far side can only gain agents that
      // were by the gap in the frame before.
      if (w.frames > 0 && far - w.lastFar > w.lastGap) w.jumps++;
      w.lastFar = far; w.lastGap = gap; w.frames++;
      w.maxAgents = Math.max(w.maxAgents, a.n);
    };
  }, [WALL_X, WALL_END]);

  await page.fill('#count', '500');
  await page.fill('#spread', '12');
  await page.fill('#speed', '6');
  await page.fill('#radius', '0.35');
  await page.check('input[name=tool][value=spawn]');
  p = await at(16, 32);
  await page.mouse.click(p.x, p.y);
  await page.waitForFunction(() => window.horde.stats && window.horde.stats.agents === 500);
  await page.evaluate(() => { const r = document.getElementById('rate'); r.value = '4'; r.dispatchEvent(new Event('change')); });
  await page.click('#play');
  const t0 = Date.now();
  await page.waitForFunction(() => window.horde.stats.arrived === 500, null, { timeout: 240000, polling: 200 });
  result.arriveSeconds = (Date.now() - t0) / 1000;
  await sleep(300);
  result.watch = await page.evaluate(() => window.horde.watch);
  result.stats = await page.evaluate(() => window.horde.stats);
  await page.click('#play'); // pause, so the picture holds still
  await sleep(200);
  const out = process.env.OUT_DIR || '.';
  result.screenshot = `${out}/playground.png`;
  await page.screenshot({ path: result.screenshot });
  // Where things are in the picture: wall cells, the goal, the spawn area.
  result.pixels = {
    wall: await Promise.all([4, 20, 40].map((y) => at(WALL_X + 0.5, y + 0.5))),
    goal: await at(85.5, 10.5),
    spawn: await at(16, 32),
    scale: (await page.evaluate(() => window.horde.view())).scale,
  };
  result.errors = await page.evaluate(() => window.horde.errors);
  await page.close();

  // ---- 10,000 agents on 512 x 512 -----------------------------------------------------------
  const big = await browser.newPage({ viewport: { width: 1250, height: 720 } });
  await big.goto(process.env.HORDE_BIG_URL);
  await big.waitForFunction(() => window.horde && window.horde.ready && window.horde.state);
  const goal = await big.evaluate(() => {
    for (let r = 0; r < 256; r++) {
      for (let y = 256 - r; y <= 256 + r; y++) {
        for (let x = 256 - r; x <= 256 + r; x++) if (window.horde.costAt(x, y) === 1) return [x, y];
      }
    }
    return null;
  });
  await big.evaluate(([x, y]) => {
    window.horde.send({ t: 'goal', group: 0, x: x + 0.5, y: y + 0.5, add: false });
    window.horde.send({ t: 'spawn', group: 0, x: 256, y: 256, spread: 240, count: 10000, radius: 0.3, speed: 3 });
    window.horde.send({ t: 'play' });
  }, goal);
  await big.waitForFunction(() => window.horde.stats && window.horde.stats.agents === 10000 && window.horde.state.playing);
  await sleep(500);
  const f0 = await big.evaluate(() => [window.horde.agentFrames, performance.now()]);
  await sleep(4000);
  const f1 = await big.evaluate(() => [window.horde.agentFrames, performance.now()]);
  result.agentFps = ((f1[0] - f0[0]) * 1000) / (f1[1] - f0[1]);
  result.bigAgents = await big.evaluate(() => window.horde.agents().n);

  // Strokes: each a short drag on open ground; the page times each one to its field frame.
  await big.check('input[name=tool][value=wall]');
  await big.evaluate(() => { window.horde.repairLatencies.length = 0; window.horde.paintsSent = 0; });
  const strokes = [];
  for (let k = 0; k < 24; k++) {
    const cx = 40 + 18 * (k % 6), cy = 60 + 90 * Math.floor(k / 6);
    strokes.push([cx, cy]);
  }
  for (const [cx, cy] of strokes) {
    const a = await big.evaluate(([x, y]) => window.horde.toPage(x, y), [cx, cy]);
    const b = await big.evaluate(([x, y]) => window.horde.toPage(x, y), [cx + 6, cy]);
    await big.mouse.move(a.x, a.y);
    await big.mouse.down();
    await big.mouse.move(b.x, b.y, { steps: 3 });
    await big.mouse.up();
    await sleep(150);
  }
  await sleep(300);
  const lat = (await big.evaluate(() => window.horde.repairLatencies.slice())).sort((x, y) => x - y);
  result.repairLatency = {
    count: lat.length,
    sent: await big.evaluate(() => window.horde.paintsSent),
    pending: await big.evaluate(() => window.horde.paintsPending()),
    median: lat[Math.floor(lat.length / 2)],
    p90: lat[Math.floor(lat.length * 0.9)],
    max: lat[lat.length - 1],
  };
  result.bigErrors = await big.evaluate(() => window.horde.errors);
  result.drawMs = await big.evaluate(() => [window.horde.drawMs, window.horde.drawMsMax]);
  await big.close();
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
