/**
 * The browser side of history_open.py: opens a notebook in a fresh Chromium
 * context, RUNS times, and prints one JSON line per run with the times (ms
 * from navigation start) when the notebook's first cell showed, when every
 * cell had its badge, and when the whole history was read in brief (its
 * oldest page arrived; measured from the test's clock, so within a few ms);
 * then, in another fresh context, ms from a double click on the notebook in
 * the file browser of a loaded JupyterLab to every cell's badge.
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
    const began = Date.now();
    let oldest = null;
    page.on('response', response => {
      if (/\/history\?since_step=0&/.test(response.url())) {
        oldest = Date.now() - began;
      }
    });
    if (process.env.THEMISTO_DEBUG) {
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
    const badges = await page.waitForFunction(
      n =>
        document.querySelectorAll(
          '.jp-Notebook .jp-Cell .themisto-CellMarker[data-themisto-step]'
        ).length >= n && performance.now(),
      Number(cells),
      { polling: 'raf', timeout: 120000 }
    );
    // The whole history is read in brief when its oldest page came.
    const deadline = Date.now() + 60000;
    while (oldest === null && Date.now() < deadline) {
      await new Promise(resolve => setTimeout(resolve, 20));
    }
    const result = {
      run,
      first_cell_ms: await firstCell.jsonValue(),
      badges_ms: await badges.jsonValue(),
      history_ms: oldest
    };
    await context.close();
    result.open_ms = await openFromBrowser();
    console.log(JSON.stringify(result));
  }
} finally {
  await browser.close();
}

/**
 * A user opening the notebook in a JupyterLab already loaded: ms from the
 * double click on it in the file browser to every cell's badge (a fresh
 * context, so nothing of the notebook is cached).
 */
async function openFromBrowser() {
  const context = await browser.newContext({
    viewport: { width: 1280, height: 1000 }
  });
  try {
    const page = await context.newPage();
    await page.goto(`${url}/lab?token=${token}&reset`);
    const item = page.locator('.jp-DirListing-item', {
      has: page.locator('.jp-DirListing-itemText', { hasText: notebook })
    });
    await item.waitFor({ timeout: 120000 });
    await page.locator('.jp-Launcher').waitFor({ timeout: 120000 });
    await page.evaluate(() => {
      window.__themistoOpen = performance.now();
    });
    await item.dblclick();
    const badged = await page.waitForFunction(
      n =>
        document.querySelectorAll(
          '.jp-Notebook .jp-Cell .themisto-CellMarker[data-themisto-step]'
        ).length >= n && performance.now() - window.__themistoOpen,
      Number(cells),
      { polling: 'raf', timeout: 120000 }
    );
    return await badged.jsonValue();
  } finally {
    await context.close();
  }
}
