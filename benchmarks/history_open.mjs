/**
 * The browser side of history_open.py: opens a notebook in a fresh Chromium
 * context, RUNS times, and prints one JSON line per run with the times (ms
 * from navigation start) when the notebook's first cell showed, when every
 * cell had its badge, and when the whole history was read in brief.
 *
 *   node benchmarks/history_open.mjs URL TOKEN NOTEBOOK CELLS STEPS RUNS
 *
 * Playwright comes from ui-tests/node_modules; the browser is Debian's
 * Chromium (CHROMIUM_PATH, default /usr/bin/chromium), never a download.
 */
import { createRequire } from 'node:module';

const require = createRequire(new URL('../ui-tests/package.json', import.meta.url));
const { chromium } = require('@playwright/test');

const [url, token, notebook, cells, steps, runs] = process.argv.slice(2);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking']
});
try {
  for (let run = 0; run < Number(runs); run++) {
    const context = await browser.newContext({
      viewport: { width: 1280, height: 1000 }
    });
    const page = await context.newPage();
    if (process.env.THEMISTO_DEBUG) {
      const began = Date.now();
      page.on('request', r => {
        if (r.url().includes('/api/')) {
          console.error('REQ', Date.now() - began, r.url().slice(0, 110));
        }
      });
      page.on('response', r => {
        if (r.url().includes('/api/')) {
          console.error('RES', Date.now() - began, r.status(), r.url().slice(0, 110));
        }
      });
    }
    await page.goto(`${url}/lab/tree/${notebook}?token=${token}&reset`, {
      waitUntil: 'commit'
    });
    const firstCell = await page.waitForFunction(
      () => document.querySelector('.jp-Notebook .jp-Cell') && performance.now(),
      null,
      { polling: 'raf', timeout: 120000 }
    );
    // The panel open, as a user reviewing the history has it: its
    // scoreboard shows when the whole history is read.
    await page
      .locator('.lm-TabBar-tab[data-id="themisto-prediction-panel"]')
      .click();
    const badges = await page.waitForFunction(
      n =>
        document.querySelectorAll(
          '.jp-Notebook .jp-Cell .themisto-CellMarker[data-themisto-step]'
        ).length >= n && performance.now(),
      Number(cells),
      { polling: 'raf', timeout: 120000 }
    );
    // Every step in brief: the scoreboard counts each scored step's output.
    const history = await page.evaluate(
      async ({ n }) => {
        const deadline = performance.now() + 60000;
        for (;;) {
          const counted = [
            ...document.querySelectorAll(
              '.themisto-Scoreboard tr[data-task="output"] td:nth-of-type(1)'
            )
          ].map(td => Number(td.textContent));
          if (counted.length && counted.every(c => c >= n)) {
            return performance.now();
          }
          if (performance.now() > deadline) {
            return null;
          }
          await new Promise(resolve => setTimeout(resolve, 20));
        }
      },
      { n: Number(steps) }
    );
    console.log(
      JSON.stringify({
        run,
        first_cell_ms: await firstCell.jsonValue(),
        badges_ms: await badges.jsonValue(),
        history_ms: history
      })
    );
    await context.close();
  }
} finally {
  await browser.close();
}
