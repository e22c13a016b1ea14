import * as fs from 'fs';
import * as path from 'path';

import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';
import { Locator } from '@playwright/test';

import { createNamed, openPanel, screenshotThemesTo } from './helpers';

/*
 * The documentation's tour, in pictures taken from a real session against
 * the test server (baseline predictor, contexts none and full): each
 * screenshot is written to docs/_static/tour/ in the light and the dark
 * theme, once what it shows is there. Run it to bring the pictures up to
 * date with the UI.
 */

const TOUR = path.resolve(__dirname, '../../docs/_static/tour');
const LIVE = { timeout: 30000 };
const BADGE = '.jp-Cell .themisto-CellMarker';
const FOOTER = '.jp-Cell .themisto-CellFooter';

/**
 * A small notebook, without pandas, as a first session goes. The baseline
 * predictor under `none` sees no runtime state: of the last cell, which
 * prints a literal and shows a value, it predicts the printed line only (a
 * diff); under `full` it knows x. The last cell is most like the first, so
 * the next cell predicted after it is the one that followed the first.
 */
const SOURCES = [
  'x = [3, 1, 2]',
  'sorted(x)',
  'x = x + [6]\nprint("mean of x:")\nsum(x) / len(x)'
];
/** The right sidebar's width in the pictures: two cards side by side. */
const PANEL_WIDTH = 440;
/** The window in the pictures. */
const VIEWPORT = { width: 1280, height: 800 };
/** Around what a picture of a region shows. */
const MARGIN = 8;

test.use({ viewport: VIEWPORT });

type Region = { x: number; y: number; width: number; height: number };

/**
 * The region of the panel, scrolled to its top, from its top down to the
 * bottom of `last`: the page made taller if it does not show it whole.
 */
async function panelRegion(
  page: IJupyterLabPageFixture,
  panel: Locator,
  last: Locator
): Promise<Region> {
  await panel.evaluate(node => {
    node.scrollTop = 0;
  });
  const measure = async (): Promise<{ shown: Region; bottom: number }> => {
    const shown = await panel.boundingBox();
    const box = await last.boundingBox();
    expect(shown).not.toBeNull();
    expect(box).not.toBeNull();
    return { shown: shown!, bottom: box!.y + box!.height + MARGIN };
  };
  const before = await measure();
  const missing = Math.ceil(before.bottom - before.shown.y - before.shown.height);
  if (missing > 0) {
    await page.setViewportSize({
      width: VIEWPORT.width,
      height: VIEWPORT.height + missing
    });
    await expect
      .poll(async () => {
        const { shown, bottom } = await measure();
        return shown.y + shown.height >= bottom;
      })
      .toBe(true);
  }
  const { shown, bottom } = await measure();
  return {
    x: shown.x,
    y: shown.y,
    width: shown.width,
    height: Math.ceil(bottom - shown.y)
  };
}

/**
 * The panel, down to the bottom of `last`, in both themes (the page grown to
 * hold it, then put back).
 */
async function shootPanel(
  page: IJupyterLabPageFixture,
  panel: Locator,
  name: string,
  last: Locator
): Promise<string[]> {
  const written = await screenshotThemesTo(
    page,
    TOUR,
    name,
    await panelRegion(page, panel, last)
  );
  await page.setViewportSize(VIEWPORT);
  return written;
}

/**
 * The region of the page that the visible notebook's cells take.
 */
async function cellsRegion(page: IJupyterLabPageFixture): Promise<Region> {
  const boxes = await page
    .locator('.jp-NotebookPanel:visible .jp-Cell')
    .evaluateAll(nodes =>
      nodes.map(node => {
        const { left, top, right, bottom } = node.getBoundingClientRect();
        return { left, top, right, bottom };
      })
    );
  expect(boxes.length).toBeGreaterThan(0);
  const left = Math.max(0, Math.min(...boxes.map(b => b.left)) - MARGIN);
  const top = Math.max(0, Math.min(...boxes.map(b => b.top)) - MARGIN);
  const right = Math.max(...boxes.map(b => b.right)) + MARGIN;
  const bottom = Math.max(...boxes.map(b => b.bottom)) + MARGIN;
  return { x: left, y: top, width: right - left, height: bottom - top };
}

test('the tour: a notebook, its predictions, and a step reviewed', async ({
  page,
  tmpPath
}) => {
  test.setTimeout(180000);
  fs.mkdirSync(TOUR, { recursive: true });

  // The window as one works in it: the notebook alone in the main area, the
  // file browser closed (Galata opens the notebook from it), the panel wide
  // enough for its cards side by side.
  await createNamed(page, tmpPath, 'tour.ipynb', { sources: SOURCES });
  const tabs = page.locator('#jp-main-dock-panel .lm-TabBar-tab');
  await tabs
    .filter({ hasText: 'Launcher' })
    .locator('.lm-TabBar-tabCloseIcon')
    .click();
  await expect(tabs).toHaveCount(1);
  await page.sidebar.close('left');
  const panel = await openPanel(page);
  expect(await page.sidebar.setWidth(PANEL_WIDTH, 'right')).toBe(true);
  await expect
    .poll(async () => Math.round((await panel.boundingBox())?.width ?? 0))
    .toBeGreaterThan(PANEL_WIDTH - 40);

  for (let i = 0; i < SOURCES.length; i++) {
    await page.notebook.runCell(i, { inplace: true });
    // One cell at a time, as a person works: every prediction is made.
    await expect(page.locator(BADGE)).toHaveCount(i + 1, LIVE);
  }
  await page.notebook.save();
  await expect(page.locator(`${BADGE}[data-state="scored"]`)).toHaveCount(
    SOURCES.length,
    LIVE
  );
  await expect(page.locator(FOOTER)).toHaveCount(SOURCES.length, LIVE);

  // The last cell's output, predicted under each context, beside the real
  // one, with its scores.
  const last = String(SOURCES.length);
  const outputs = panel.locator('.themisto-OutputSection .themisto-Card');
  await expect(outputs).toHaveCount(2, LIVE);
  for (const context of ['none', 'full']) {
    const card = panel.locator(
      `.themisto-OutputSection .themisto-Card[data-context="${context}"]`
    );
    await expect(card).toHaveAttribute('data-target-step', last, LIVE);
    await expect(card).toHaveAttribute('data-state', 'done', LIVE);
    await expect(card).toHaveAttribute('data-landed', 'true', LIVE);
    await expect(card.locator('.themisto-Actual')).toHaveText(
      /^mean of x:\n3\.0\n?$/
    );
    await expect(card.locator('.themisto-Scores')).toHaveAttribute(
      'data-rouge-l',
      /^[01](\.\d+)?$/,
      LIVE
    );
    await expect(card.locator('.themisto-Scores')).toContainText('ROUGE-L');
  }
  const none = panel.locator(
    '.themisto-OutputSection .themisto-Card[data-context="none"]'
  );
  await expect(none.locator('.themisto-Predicted')).toHaveText(
    /^mean of x:\n?$/
  );
  await expect(
    none.locator('.themisto-Actual .themisto-Diff-insert')
  ).toContainText('3.0');
  await expect(none.locator('.themisto-Scores')).toHaveAttribute(
    'data-rouge-l',
    /^0\.\d*[1-9]/
  );
  const full = panel.locator(
    '.themisto-OutputSection .themisto-Card[data-context="full"]'
  );
  await expect(full.locator('.themisto-Predicted')).toHaveText(
    /^mean of x:\n3\.0\n?$/
  );
  await expect(full.locator('.themisto-Scores')).toHaveAttribute(
    'data-rouge-l',
    /^1(\.0+)?$/
  );
  // The next cell, predicted at the end of the notebook: what followed the
  // cell most like the last one.
  const next = panel.locator('.themisto-NextSection .themisto-Card');
  await expect(next).toHaveCount(2, LIVE);
  for (const context of ['none', 'full']) {
    const card = panel.locator(
      `.themisto-NextSection .themisto-Card[data-context="${context}"]`
    );
    await expect(card).toHaveAttribute(
      'data-target-step',
      String(SOURCES.length + 1),
      LIVE
    );
    await expect(card).toHaveAttribute('data-state', 'done', LIVE);
    await expect(card.locator('.themisto-NextCode')).toHaveText(SOURCES[1]);
  }
  // Nothing in the way: no dialog, the kernel idle, the save's message gone.
  await expect(page.locator('.jp-Dialog')).toHaveCount(0);
  await expect(
    page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]:visible')
  ).toHaveCount(1);
  await expect(
    page.locator('#jp-main-statusbar', { hasText: 'Saving' })
  ).toHaveCount(0, LIVE);
  const written = await screenshotThemesTo(page, TOUR, 'notebook-panel');

  // The cells' badges (the first column's score) and footers.
  await expect(page.locator(BADGE)).toHaveText([
    'RL 1.00',
    'RL 0.00',
    /^RL 0\.\d\d$/
  ]);
  await expect(page.locator(FOOTER).nth(1)).toHaveText(
    /^step 2 · \d+ ms · [\d.]+ [KMG]iB · output prediction: word overlap \(ROUGE-L\) 0\.00 of 1/
  );
  written.push(
    ...(await screenshotThemesTo(page, TOUR, 'cell-marks', await cellsRegion(page)))
  );

  // The panel alone, down to the predicted next cell.
  written.push(
    ...(await shootPanel(
      page,
      panel,
      'panel-output',
      panel.locator('.themisto-NextSection')
    ))
  );

  // An earlier step reviewed: its badge shows it in the panel.
  await page.locator(BADGE).nth(1).click();
  const view = panel.locator('[data-themisto-view-step="2"]');
  await expect(view).toBeVisible(LIVE);
  await expect(panel.locator('.themisto-OutputSection h3')).toHaveText(
    'Output of step 2'
  );
  await expect(
    view.locator('.themisto-OutputSection .themisto-Actual').first()
  ).toHaveText(/^\[1, 2, 3\]\n?$/, LIVE);
  const reviewed = view.locator('.themisto-NextSection');
  await expect(reviewed.locator('h3')).toHaveText(
    'Next cell (step 3), predicted after step 2'
  );
  await expect(reviewed.locator('.themisto-ActualCode')).toHaveText(
    [SOURCES[2], SOURCES[2]],
    LIVE
  );
  await expect(reviewed.locator('.themisto-Scores')).toHaveCount(2, LIVE);
  await expect(
    view.locator('.themisto-VariablesTable tr[data-name="x"]')
  ).toContainText('[3, 1, 2]', LIVE);
  written.push(
    ...(await shootPanel(
      page,
      panel,
      'review',
      view.locator('.themisto-RuntimeSection')
    ))
  );

  expect(written).toHaveLength(8); // 4 pictures, light and dark
  for (const file of written) {
    expect(fs.statSync(file).size).toBeGreaterThan(5000);
  }
});
