import { expect, test } from '@jupyterlab/galata';
import { readFileSync } from 'fs';

const STATUS_ITEM = '.themisto-StatusItem';

test.describe('Themisto commands', () => {
  test('exports the trajectory and toggles recording from the menu', async ({
    page
  }) => {
    await page.notebook.createNew('export me.ipynb');
    await page.notebook.setCell(0, 'code', 'a = 1');
    await page.notebook.runCell(0, { inplace: true });
    const item = page.locator(STATUS_ITEM);
    await expect(item).toHaveAttribute('data-steps', '1', { timeout: 15000 });

    // The export downloads this notebook's trajectory as JSONL.
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.menu.clickMenuItem("Themisto>Export This Notebook's Trajectory")
    ]);
    expect(download.suggestedFilename()).toBe('export_me.jsonl');
    const lines = readFileSync((await download.path()) ?? '', 'utf-8')
      .split('\n')
      .filter(line => line.trim() !== '');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toMatchObject({ step: 1, code: 'a = 1' });

    // Toggle recording: the status bar follows.
    await page.menu.clickMenuItem('Themisto>Toggle Recording');
    await expect(item).toHaveAttribute('data-recording', 'false', {
      timeout: 10000
    });
    // The menu must be closed before it is opened again.
    await expect(page.locator('.lm-Menu')).toHaveCount(0);
    await page.menu.clickMenuItem('Themisto>Toggle Recording');
    await expect(item).toHaveAttribute('data-recording', 'true', {
      timeout: 10000
    });
  });
});
