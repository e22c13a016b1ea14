import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';

import { openPanel } from './helpers';

/*
 * The panel in use: the keyboard focus stays with the notebook whatever is
 * clicked, and the panel fits JupyterLab's default side bar width.
 */

const LIVE = { timeout: 30000 };
const STATUS_ITEM = '.themisto-StatusItem';

test.use({ viewport: { width: 1280, height: 1000 } });

/**
 * Whether the keyboard focus is in the active notebook.
 */
function focusInNotebook(page: IJupyterLabPageFixture): Promise<boolean> {
  return page.evaluate(
    () => document.activeElement?.closest('.jp-Notebook') !== null
  );
}

function activeCellIndex(page: IJupyterLabPageFixture): Promise<number> {
  return page.evaluate(() => {
    const widget = window.jupyterapp.shell.currentWidget as unknown as {
      content: { activeCellIndex: number };
    };
    return widget.content.activeCellIndex;
  });
}

test.describe('Themisto focus and layout', () => {
  test('the focus goes back to the notebook after every button', async ({
    page
  }) => {
    await page.notebook.createNew();
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

    // Copy says so, and gives the focus back.
    await next.locator('.themisto-Copy').click();
    await expect(next.locator('.themisto-Copy')).toHaveText('Copied');
    expect(await focusInNotebook(page)).toBe(true);

    // Insert below (last: the next cell is then written, and the panel says
    // so instead of predicting it): the cell goes after the last cell run;
    // Enter then edits it instead of inserting it again.
    await next.locator('.themisto-Insert').click();
    await expect.poll(() => page.notebook.getCellCount()).toBe(3);
    expect(await focusInNotebook(page)).toBe(true);
    await page.keyboard.press('Enter');
    await page.keyboard.press('Escape');
    expect(await page.notebook.getCellCount()).toBe(3);

    for (const button of [
      '.themisto-PredictNow',
      '.themisto-Review-previous',
      '.themisto-Review-live'
    ]) {
      await panel.locator(button).click();
      expect(await focusInNotebook(page), button).toBe(true);
    }
    await panel.locator('.themisto-Scoreboard tr[data-step]').first().click();
    expect(await focusInNotebook(page)).toBe(true);
    await panel.locator('.themisto-Plot-dot').last().click();
    expect(await focusInNotebook(page)).toBe(true);
    await panel.locator('.themisto-Review-live').click();

    // The status bar item: one click switches recording, and Shift+Enter
    // then runs the cell (it does not switch recording back).
    await page.notebook.selectCells(0);
    await page.keyboard.press('Escape');
    const item = page.locator(STATUS_ITEM);
    await item.click();
    await expect(item).toHaveAttribute('data-recording', 'false', LIVE);
    expect(await focusInNotebook(page)).toBe(true);
    await page.keyboard.press('Shift+Enter');
    await expect.poll(() => activeCellIndex(page)).toBe(1);
    await expect(item).toHaveAttribute('data-recording', 'false');
    await item.click();
    await expect(item).toHaveAttribute('data-recording', 'true', LIVE);
    await page.keyboard.press('Shift+Enter');
    await expect.poll(() => activeCellIndex(page)).toBe(2);
    await expect(item).toHaveAttribute('data-recording', 'true');
  });

  test('at 250 px outputs scroll sideways, tracebacks show their error first, internals are hidden', async ({
    page
  }, testInfo) => {
    await page.notebook.createNew();
    await page.notebook.setCell(
      0,
      'code',
      [
        'import pandas as pd',
        'df = pd.DataFrame([[i * 1000 + j for j in range(10)] for i in range(6)],',
        '                  columns=[f"column_{j}" for j in range(10)])',
        'df'
      ].join('\n')
    );
    await page.notebook.addCell('code', '');
    // Set whole (typing it, the editor would indent the last line).
    await page.evaluate(source => {
      const widget = window.jupyterapp.shell.currentWidget as unknown as {
        content: {
          widgets: Array<{
            model: { sharedModel: { setSource(s: string): void } };
          }>;
        };
      };
      widget.content.widgets[1].model.sharedModel.setSource(source);
    }, 'def ratio(a, b):\n    return a / b\n\nratio(len(df), 0)');
    await page.notebook.runCell(0, { inplace: true });
    await expect(page.locator('.jp-Cell .themisto-CellMarker')).toHaveCount(
      1,
      LIVE
    );
    await page.notebook.runCell(1, { inplace: true });
    const panel = await openPanel(page);
    // JupyterLab's default side bar width.
    await page.evaluate(() => {
      const shell = window.jupyterapp.shell as unknown as {
        collapseLeft(): void;
        _hsplitPanel: {
          node: HTMLElement;
          setRelativeSizes(sizes: number[]): void;
        };
      };
      shell.collapseLeft();
      const split = shell._hsplitPanel;
      const total = split.node.clientWidth;
      split.setRelativeSizes([0, total - 250, 250]);
    });
    await expect
      .poll(async () => Math.round((await panel.boundingBox())?.width ?? 0), {
        timeout: 5000
      })
      .toBeLessThanOrEqual(252);

    // The traceback's error line and last frame come first.
    const output = panel.locator(
      '.themisto-OutputSection .themisto-Card[data-context="full"]'
    );
    await expect(output).toHaveAttribute('data-landed', 'true', LIVE);
    await expect(output.locator('.themisto-Traceback-error')).toHaveText(
      'ZeroDivisionError: division by zero'
    );
    await expect(output.locator('.themisto-Traceback-frame')).toContainText(
      'return a / b'
    );
    await expect(output.locator('.themisto-Traceback-error')).toBeInViewport();
    const traceback = testInfo.outputPath('layout-250-traceback.png');
    await panel.screenshot({ path: traceback, animations: 'disabled' });
    await testInfo.attach('layout-250-traceback', {
      path: traceback,
      contentType: 'image/png'
    });

    // The DataFrame step: rows stay one line each and scroll sideways.
    await page.locator('.jp-Cell .themisto-CellMarker').first().click();
    await expect(panel.locator('[data-themisto-view-step]')).toBeVisible();
    const actual = panel
      .locator('.themisto-OutputSection .themisto-Actual')
      .first();
    await expect(actual).toContainText('column_9', LIVE);
    // Measured on the node shown at the time: the panel may redraw the section
    // (its scores arriving) between finding the node and measuring it, and a
    // node taken out of the page has no computed style.
    const measure = () =>
      actual.evaluate(node => ({
        scroll: node.scrollWidth,
        client: node.clientWidth,
        whiteSpace: getComputedStyle(node).whiteSpace,
        attached: node.isConnected
      }));
    let box = await measure();
    await expect.poll(async () => (box = await measure()).attached).toBe(true);
    // Lines are never wrapped by the panel (pandas wraps its own text at
    // 80 characters): a row stays a row, and the box scrolls sideways.
    expect(box.whiteSpace).toBe('pre');
    expect(box.scroll).toBeGreaterThan(box.client);
    // The runtime table: the user's names only, full name on hover.
    const variables = panel.locator('.themisto-VariablesTable');
    await expect(variables.locator('tr[data-name="df"]')).toHaveAttribute(
      'title',
      /^df: DataFrame 6×10 = /
    );
    for (const name of ['_', '__', '_i1', '_1', '_exit_code', 'In', 'Out']) {
      await expect(variables.locator(`tr[data-name="${name}"]`)).toHaveCount(0);
    }
    const dataframe = testInfo.outputPath('layout-250-dataframe.png');
    await panel.screenshot({ path: dataframe, animations: 'disabled' });
    await testInfo.attach('layout-250-dataframe', {
      path: dataframe,
      contentType: 'image/png'
    });
    const runtime = panel.locator('.themisto-RuntimeSection');
    await runtime.scrollIntoViewIfNeeded();
    const table = testInfo.outputPath('layout-250-runtime.png');
    await runtime.screenshot({ path: table, animations: 'disabled' });
    await testInfo.attach('layout-250-runtime', {
      path: table,
      contentType: 'image/png'
    });
  });
});
