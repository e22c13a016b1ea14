import { expect, test } from '@jupyterlab/galata';

import { cellId, createNamed, openPanel } from './helpers';

/*
 * A notebook's prediction history against the real server (baseline
 * predictor, contexts none and full): what survives a reload, the review
 * of any step, and what cells run in quick succession say.
 */

const LIVE = { timeout: 30000 };
const BADGE = '.jp-Cell .themisto-CellMarker';
const FOOTER = '.jp-Cell .themisto-CellFooter';

// A reload must find the notebook's kernel still running, as it would for a
// user: Galata's tracking of kernels and sessions (which answers the page's
// session listing itself) is off, and the kernels are shut down after each test.
test.use({
  viewport: { width: 1280, height: 1200 },
  kernels: null,
  sessions: null
});
test.beforeEach(async ({ page }) => {
  if (process.env.THEMISTO_DEBUG) {
    page.on('console', msg => console.log('CONSOLE', msg.type(), msg.text()));
    page.on('response', res => {
      if (res.url().includes('themisto/api') || res.status() >= 400) {
        console.log('RES', res.status(), res.request().method(), res.url());
      }
    });
  }
});
test.afterEach(async ({ page }) => {
  await page.kernel.shutdownAll();
});

async function badges(
  page: import('@jupyterlab/galata').IJupyterLabPageFixture
): Promise<Array<{ step: string | null; text: string }>> {
  return page.locator(BADGE).evaluateAll(nodes =>
    nodes.map(node => ({
      step: node.getAttribute('data-themisto-step'),
      text: node.textContent ?? ''
    }))
  );
}

/**
 * Reload the page (the notebook comes back with the workspace, its kernel
 * still running) and make the notebook active.
 */
async function reopen(
  page: import('@jupyterlab/galata').IJupyterLabPageFixture,
  name: string
): Promise<void> {
  // Galata's readiness check waits for the launcher, which a restored
  // workspace does not show.
  await page.reload({ waitForIsReady: false });
  await page.locator('.jp-NotebookPanel').first().waitFor();
  if (!(await page.notebook.isOpen(name))) {
    await page.notebook.open(name);
  }
  await page.notebook.activate(name);
}

test.describe('Themisto history', () => {
  test('a reload restores every badge and footer, and a badge shows its step', async ({
    page,
    tmpPath
  }) => {
    // The same kernel after the reload: its live scores come back too.
    await createNamed(page, tmpPath, 'history.ipynb');
    await page.notebook.setCell(0, 'code', 'x = 21');
    await page.notebook.addCell('code', 'print(x)');
    await page.notebook.addCell('code', 'y = x * 2\ny');
    for (let i = 0; i < 3; i++) {
      await page.notebook.runCell(i, { inplace: true });
      // One cell at a time, as a person works: every prediction is made.
      await expect(page.locator(BADGE)).toHaveCount(i + 1, LIVE);
    }
    await expect(page.locator(`${BADGE}[data-state="scored"]`)).toHaveCount(
      3,
      LIVE
    );
    await expect(page.locator(FOOTER)).toHaveCount(3);
    await expect(page.locator(FOOTER).nth(1)).toHaveText(
      /^step 2 · \d+ ms · [\d.]+ [KMG]iB · output prediction: word overlap \(ROUGE-L\) \d\.\d\d of 1/
    );
    const before = await badges(page);
    expect(before.map(b => b.step)).toEqual(['1', '2', '3']);
    const footers = await page.locator(FOOTER).allTextContents();
    await page.notebook.save();
    await reopen(page, 'history.ipynb');
    await expect(page.locator(BADGE)).toHaveCount(3, LIVE);
    expect(await badges(page)).toEqual(before);
    await expect(page.locator(FOOTER)).toHaveText(footers);

    // A badge shows its step: output, next cell predicted after it, runtime.
    const panel = await openPanel(page);
    await page.locator(BADGE).first().click();
    const view = panel.locator('[data-themisto-view-step="1"]');
    await expect(view).toBeVisible();
    await expect(view.locator('.themisto-OutputSection h3')).toHaveText(
      'Output of step 1'
    );
    const next = view.locator('.themisto-NextSection');
    await expect(next.locator('h3')).toHaveText(
      'Next cell (step 2), predicted after step 1'
    );
    await expect(next.locator('.themisto-ActualCode').first()).toHaveText(
      'print(x)',
      LIVE
    );
    await expect(view.locator('.themisto-RuntimeSection h3')).toHaveText(
      'Runtime after step 1',
      LIVE
    );
    await expect(
      view.locator('.themisto-VariablesTable tr[data-name="x"]')
    ).toContainText('int');

    // Previous / next, with the buttons and the keyboard.
    await panel.locator('.themisto-Review-next').click();
    await expect(panel.locator('[data-themisto-view-step="2"]')).toBeVisible();
    await expect(
      panel.locator('.themisto-OutputSection .themisto-Actual').first()
    ).toHaveText(/^21\n?$/, LIVE);
    await page.keyboard.press('Alt+Shift+ArrowDown');
    await expect(panel.locator('[data-themisto-view-step="3"]')).toBeVisible();
    await page.keyboard.press('Alt+Shift+ArrowUp');
    await expect(panel.locator('[data-themisto-view-step="2"]')).toBeVisible();
    await page.keyboard.press('Alt+Shift+L');
    await expect(panel.locator('[data-themisto-view-step]')).toHaveCount(0);
    await expect(panel).toHaveAttribute('data-view', 'live');

    // A scoreboard row and a plot point show a step too; one click goes live.
    await panel
      .locator('.themisto-Scoreboard tr[data-task="output"][data-step]')
      .first()
      .click();
    await expect(panel.locator('[data-themisto-view-step="3"]')).toBeVisible();
    await panel.locator('.themisto-Plot-dot[data-step="2"]').last().click();
    await expect(panel.locator('[data-themisto-view-step="2"]')).toBeVisible();
    await panel.locator('.themisto-Review-live').click();
    await expect(panel).toHaveAttribute('data-view', 'live');
  });

  test('a notebook without cell ids (nbformat 4.4) gets every badge back after a reload', async ({
    page,
    tmpPath
  }) => {
    // As most notebooks in the wild: JupyterLab gives the cells new ids at
    // every load, so after the reload no step names a cell by its id.
    const sources = [
      'a = 6',
      'b = a * 7\nb',
      'print(b + 1)',
      'c = [a, b]',
      'len(c)'
    ];
    await createNamed(page, tmpPath, 'old-format.ipynb', {
      sources,
      nbformatMinor: 4
    });
    const ids = async (): Promise<string[]> =>
      Promise.all(sources.map((_, i) => cellId(page, i)));
    const idsBefore = await ids();
    for (let i = 0; i < sources.length; i++) {
      await page.notebook.runCell(i, { inplace: true });
      await expect(page.locator(BADGE)).toHaveCount(i + 1, LIVE);
    }
    await expect(page.locator(FOOTER)).toHaveCount(sources.length, LIVE);
    const before = await badges(page);
    expect(before.map(b => b.step)).toEqual(['1', '2', '3', '4', '5']);
    // Not saved: the file on disk stays nbformat 4.4, without ids.
    page.once('dialog', dialog => void dialog.accept());
    await reopen(page, 'old-format.ipynb');
    const idsAfter = await ids();
    expect(idsAfter.filter(id => idsBefore.includes(id))).toEqual([]);
    await expect(page.locator(BADGE)).toHaveCount(sources.length, LIVE);
    expect((await badges(page)).map(b => b.step)).toEqual(
      before.map(b => b.step)
    );
    await expect(page.locator(FOOTER)).toHaveCount(sources.length);

    // Review the active cell's step (Alt+Shift+R) finds it too.
    const panel = await openPanel(page);
    await page.notebook.selectCells(1);
    await page.keyboard.press('Alt+Shift+R');
    await expect(panel.locator('[data-themisto-view-step="2"]')).toBeVisible(
      LIVE
    );
  });

  test('after Run All the footers are quiet, and the review says why a step has no prediction', async ({
    page
  }) => {
    // Made Untitled and renamed at once, as a user does: the history follows the
    // name, whether the reload finds the kernel or starts another.
    await page.notebook.createNew('quick.ipynb');
    await page.notebook.setCell(0, 'code', 'import time\ntime.sleep(0.3)');
    for (let i = 1; i <= 6; i++) {
      await page.notebook.addCell('code', `v${i} = ${i}`);
    }
    // Run all: each cell starts as soon as the one before ends, before the
    // server could predict it from that one.
    await page.notebook.run();
    await expect(page.locator(FOOTER)).toHaveCount(7, LIVE);
    await expect(page.locator(BADGE)).toHaveCount(7, LIVE);
    await expect(
      page.locator(`${BADGE}[data-state="predicting"]`)
    ).toHaveCount(0, LIVE);
    // The cells were written already: no footer calls a next cell that the
    // next cell's start superseded "not predicted".
    const quiet = async (): Promise<void> => {
      await expect(page.locator(FOOTER, { hasText: 'superseded' })).toHaveCount(
        0
      );
      await expect(
        page.locator(FOOTER, { hasText: 'not predicted' })
      ).toHaveCount(0);
    };
    await quiet();
    await page.notebook.save();
    await reopen(page, 'quick.ipynb');
    await expect(page.locator(FOOTER)).toHaveCount(7, LIVE);
    await quiet();

    // The review says why, in the next-cell cards of a step whose next cell
    // started first (the server's record: it is there after the reload).
    const panel = await openPanel(page);
    const missed = panel.locator('.themisto-NextSection .themisto-Missed');
    let found = false;
    for (let step = 1; step <= 6 && !found; step++) {
      await page.locator(`${BADGE}[data-themisto-step="${step}"]`).click();
      await expect(
        panel.locator(`[data-themisto-view-step="${step}"]`)
      ).toBeVisible(LIVE);
      await page.waitForTimeout(300);
      found = (await missed.count()) > 0;
    }
    expect(found).toBe(true);
    await expect(missed.first()).toHaveText(
      'No prediction: superseded: the next cell started first'
    );
  });

  test('ghost text shows only in the empty cell below the last cell run, never that cell again', async ({
    page
  }) => {
    await page.notebook.createNew('ghost.ipynb');
    await page.notebook.setCell(0, 'code', 'x = 21');
    await page.notebook.addCell('code', 'print(x)');
    await page.notebook.runCell(0, { inplace: true });
    await page.notebook.runCell(1, { inplace: true });
    const panel = await openPanel(page);
    const next = panel.locator(
      '.themisto-NextSection .themisto-Card[data-context="none"]'
    );
    await expect(next).toHaveAttribute('data-target-step', '3', LIVE);
    await expect(next).toHaveAttribute('data-state', 'done', LIVE);
    // With two steps the baseline repeats the second: the cell just run, which
    // is not offered as the next one.
    await expect(next.locator('.themisto-NextCode')).toHaveText('print(x)');
    await page.notebook.addCell('code', '');
    await page.notebook.enterCellEditingMode(2);
    await page.waitForTimeout(1000);
    await expect(page.locator('.jp-GhostText')).toHaveCount(0);

    await page.notebook.setCell(2, 'code', 'x = 22');
    await page.notebook.runCell(2, { inplace: true });
    await expect(next).toHaveAttribute('data-target-step', '4', LIVE);
    await expect(next).toHaveAttribute('data-state', 'done', LIVE);
    const predicted =
      (await next.locator('.themisto-NextCode').textContent()) ?? '';
    expect(predicted).toBe('print(x)'); // what followed the cell most like it

    // An empty cell at the top of the notebook: no ghost text.
    await page.notebook.selectCells(0);
    await page.keyboard.press('Escape');
    await page.keyboard.press('a');
    await page.notebook.enterCellEditingMode(0);
    await page.waitForTimeout(1000);
    await expect(page.locator('.jp-GhostText')).toHaveCount(0);

    // The empty cell right below the last cell run: the prediction.
    await page.notebook.addCell('code', '');
    await page.notebook.enterCellEditingMode(4);
    await expect(page.locator('.jp-GhostText')).toHaveText(predicted, LIVE);
  });

  test('a kernel restart keeps the badges of cells not run since', async ({
    page
  }) => {
    await page.notebook.createNew('restart.ipynb');
    await page.notebook.setCell(0, 'code', 'a = 1');
    await page.notebook.addCell('code', 'b = 2');
    for (let i = 0; i < 2; i++) {
      await page.notebook.runCell(i, { inplace: true });
      await expect(page.locator(BADGE)).toHaveCount(i + 1, LIVE);
    }
    const before = await page
      .locator(BADGE)
      .evaluateAll(nodes =>
        nodes.map(n => n.getAttribute('data-themisto-trajectory'))
      );
    // The command waits for its dialog: not awaited here.
    await page.evaluate(() => {
      void window.jupyterapp.commands.execute('kernelmenu:restart');
    });
    await page.locator('.jp-Dialog .jp-mod-accept').click();
    await expect(page.locator('.themisto-StatusItem')).toHaveAttribute(
      'data-steps',
      '0',
      LIVE
    );
    // The restarted kernel recorded nothing yet: both cells keep their step.
    await expect(page.locator(BADGE)).toHaveCount(2);
    await expect(page.locator(FOOTER)).toHaveCount(2);
    // Cell 2 runs again: its badge is step 1 of the new kernel's trajectory,
    // cell 1 keeps step 1 of the earlier one.
    await page.notebook.runCell(1, { inplace: true });
    const second = page.locator(BADGE).nth(1);
    await expect(second).not.toHaveAttribute(
      'data-themisto-trajectory',
      before[1] ?? '',
      LIVE
    );
    await expect(second).toHaveAttribute('data-themisto-step', '1');
    const first = page.locator(BADGE).first();
    await expect(first).toHaveAttribute(
      'data-themisto-trajectory',
      before[0] ?? ''
    );
    // Its step is reviewed from the earlier kernel's trajectory.
    const panel = await openPanel(page);
    await first.click();
    await expect(panel.locator('[data-themisto-view-step="1"]')).toBeVisible();
    await expect(panel.locator('.themisto-Review-where')).toContainText(
      'earlier kernel'
    );
    await expect(
      panel.locator('.themisto-RuntimeSection tr[data-name="a"]')
    ).toBeVisible(LIVE);
  });
});
