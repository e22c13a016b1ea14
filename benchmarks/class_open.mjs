/**
 * The browser side of class_view.py --browser: in a fresh Chromium context,
 * load JupyterLab, open Themisto > Open Class View from the menu and time,
 * from the click, until the roster shows its first page (ROWS rows); RUNS
 * times. Prints one JSON line per run.
 *
 *   node benchmarks/class_open.mjs URL TOKEN ROWS RUNS
 *
 * Playwright comes from ui-tests/node_modules; the browser is Debian's
 * Chromium (CHROMIUM_PATH, default /usr/bin/chromium), never a download.
 */
import { createRequire } from 'node:module';

const require = createRequire(new URL('../ui-tests/package.json', import.meta.url));
const { chromium } = require('@playwright/test');

const [url, token, rows, runs] = process.argv.slice(2);
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
    await page.goto(`${url}/lab?token=${token}&reset`);
    await page.waitForSelector('.lm-MenuBar-itemLabel:text-is("Themisto")', {
      timeout: 120000
    });
    // The entry shows once the page knows its user may read everyone's.
    await page.locator('.lm-MenuBar-itemLabel:text-is("Themisto")').click();
    const entry = page.locator('.lm-Menu-itemLabel:text-is("Open Class View")');
    await entry.waitFor({ state: 'visible', timeout: 60000 });
    const clicked = await page.evaluate(() => performance.now());
    await entry.click();
    const shown = await page.waitForFunction(
      n =>
        document.querySelectorAll('.themisto-ClassView-row').length >= n &&
        performance.now(),
      Number(rows),
      { polling: 'raf', timeout: 120000 }
    );
    const opened = (await shown.jsonValue()) - clicked;
    // Sorting by a column: the click to the new first page drawn.
    const first = await page
      .locator('.themisto-ClassView-row')
      .first()
      .getAttribute('data-user');
    const sortAt = await page.evaluate(() => performance.now());
    await page.locator('th[data-sort="cells"]').click();
    const sorted = await page.waitForFunction(
      was => {
        const header = document.querySelector('th[data-sort="cells"]');
        const top = document.querySelector('.themisto-ClassView-row');
        return (
          header?.getAttribute('data-order') === 'desc' &&
          document.querySelector('.themisto-ClassView')?.dataset.status === 'ready' &&
          top !== null &&
          performance.now()
        );
      },
      first,
      { polling: 'raf', timeout: 120000 }
    );
    console.log(
      JSON.stringify({ run, open_ms: opened, sort_ms: (await sorted.jsonValue()) - sortAt })
    );
    await context.close();
  }
} finally {
  await browser.close();
}
