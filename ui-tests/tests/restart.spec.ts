import { expect, test } from '@jupyterlab/galata';

/*
 * Marks after a kernel restart, against the real server (baseline
 * predictor, contexts none and full): Restart and Run All stopping at an
 * error leaves the cells below it unrun in the new kernel; their badges and
 * footers are the old kernel's and must say so. And no footer keeps saying
 * "predicting…" after its prediction has ended.
 */

const LIVE = { timeout: 30000 };
const BADGE = '.jp-Cell .themisto-CellMarker';
const FOOTER = '.jp-Cell .themisto-CellFooter';

// A restart must reach the real kernel: Galata's own tracking of kernels and
// sessions (which answers some of those requests itself) is off.
test.use({ kernels: null, sessions: null });
test.afterEach(async ({ page }) => {
  await page.kernel.shutdownAll();
});

test('after Restart and Run All stops at an error, unrun cells are marked as from the earlier kernel', async ({
  page
}) => {
  await page.notebook.createNew();
  await page.notebook.setCell(0, 'code', 'x = 1');
  await page.notebook.addCell('code', 'x + 1');
  await page.notebook.addCell('code', 'x * 10');
  await page.notebook.addCell('code', 'print(x)');
  await page.notebook.run();
  await expect(page.locator(BADGE)).toHaveCount(4, LIVE);
  await expect(page.locator(`${BADGE}[data-earlier="true"]`)).toHaveCount(0);

  // The second cell now raises: Run All stops there in the new kernel.
  await page.notebook.setCell(1, 'code', 'undefined_name + 1');
  // (not awaited in the page: the command waits for the dialog answered below)
  await page.evaluate(() => {
    void window.jupyterapp.commands.execute('notebook:restart-run-all');
  });
  await page.locator('.jp-Dialog .jp-mod-accept').click();
  const footers = page.locator(FOOTER);
  // The two cells that ran in the new kernel: current marks.
  await expect(footers.nth(1)).toContainText('NameError', LIVE);
  for (const i of [0, 1]) {
    await expect(footers.nth(i)).toHaveAttribute('data-earlier', 'false', LIVE);
  }
  // The two below the error did not run: their marks are the old kernel's,
  // and say so on the badge and in the footer.
  for (const i of [2, 3]) {
    const cell = page.locator('.jp-Notebook .jp-Cell').nth(i);
    await expect(cell.locator('.themisto-CellMarker')).toHaveAttribute(
      'data-earlier',
      'true',
      LIVE
    );
    await expect(cell.locator('.themisto-CellFooter')).toContainText(
      'earlier kernel'
    );
  }
  // Once it runs in the new kernel, a cell's mark is current again.
  await page.notebook.setCell(1, 'code', 'x + 1');
  await page.notebook.runCell(1, { inplace: true });
  await page.notebook.runCell(2, { inplace: true });
  const third = page.locator('.jp-Notebook .jp-Cell').nth(2);
  await expect(third.locator('.themisto-CellFooter')).toHaveAttribute(
    'data-earlier',
    'false',
    LIVE
  );
  await expect(third.locator('.themisto-CellFooter')).not.toContainText(
    'earlier kernel'
  );
});

test('no footer says "predicting…" once its predictions have ended', async ({
  page
}) => {
  await page.notebook.createNew();
  await page.notebook.setCell(0, 'code', 'import time\nx = 2');
  for (const code of ['x + 1', 'time.sleep(0.5); x * 3', 'print(x)', 'x']) {
    await page.notebook.addCell('code', code);
  }
  await page.notebook.run();
  const footers = page.locator(FOOTER);
  await expect(footers).toHaveCount(5, LIVE);
  // Every prediction of these cells ends within moments (the baseline):
  // five seconds later no footer may still say it is predicting.
  await expect(page.locator(`${BADGE}[data-state="predicting"]`)).toHaveCount(
    0,
    LIVE
  );
  await page.waitForTimeout(5000);
  const texts = await footers.allTextContents();
  expect(texts.filter(text => text.includes('predicting…'))).toEqual([]);
});
