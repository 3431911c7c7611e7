// Records the README's playground pictures: a session on the built-in map (a wall painted
// across the way, a goal, two groups of agents) as PNG frames and a screenshot.
//   horde serve --port 8080 &
//   HORDE_URL=http://127.0.0.1:8080/ OUT_DIR=/tmp/frames node record.mjs
// The frames were joined into docs/playground.gif with Pillow (every frame, 120 ms each).
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';

const out = process.env.OUT_DIR || 'frames';
mkdirSync(out, { recursive: true });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});
const page = await browser.newPage({ viewport: { width: 1100, height: 700 } });
await page.goto(process.env.HORDE_URL);
await page.waitForFunction(() => window.horde && window.horde.ready && window.horde.state);
const at = (x, y) => page.evaluate(([cx, cy]) => window.horde.toPage(cx, cy), [x, y]);
let frame = 0;
const shot = async () => {
  await sleep(60);
  await page.screenshot({ path: `${out}/frame-${String(frame++).padStart(3, '0')}.png` });
};

// A goal for the first group.
await page.check('input[name=tool][value=goal]');
let p = await at(110.5, 20.5);
await page.mouse.click(p.x, p.y);
await shot();
// A wall across the way, painted with a 1.5-cell brush.
await page.check('input[name=tool][value=wall]');
await page.fill('#brush', '1.5');
await page.dispatchEvent('#brush', 'input');
p = await at(70, 12);
await page.mouse.move(p.x, p.y);
await page.mouse.down();
for (let y = 16; y <= 100; y += 4) {
  p = await at(70, y);
  await page.mouse.move(p.x, p.y, { steps: 2 });
  if (y % 16 === 0) await shot();
}
await page.mouse.up();
await shot();
// Two groups: blue to the goal, the second group to its own goal.
await page.fill('#count', '150');
await page.fill('#spread', '7');
await page.check('input[name=tool][value=spawn]');
p = await at(20, 30);
await page.mouse.click(p.x, p.y);
await page.click('#groups button[data-group="1"]');
await page.check('input[name=tool][value=goal]');
p = await at(20, 110.5);
await page.mouse.click(p.x, p.y);
await page.check('input[name=tool][value=spawn]');
p = await at(100, 100);
await page.mouse.click(p.x, p.y);
await page.click('#groups button[data-group="0"]');
await shot();
await page.click('#play');
for (let k = 0; k < 36; k++) {
  await sleep(350);
  await shot();
}
await page.screenshot({ path: `${out}/playground.png` });
await browser.close();
