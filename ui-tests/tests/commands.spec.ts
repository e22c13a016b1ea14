import { expect, IJupyterLabPageFixture, test } from '@jupyterlab/galata';

const STATUS_ITEM = '.themisto-StatusItem';

function themistoMetadata(page: IJupyterLabPageFixture): Promise<unknown> {
  return page.evaluate(() => {
    const widget = window.jupyterapp.shell.currentWidget as unknown as {
      context: { model: { getMetadata(key: string): unknown } };
    };
    return widget.context.model.getMetadata('themisto') ?? null;
  });
}

test.describe('Themisto commands', () => {
  test('exports the trajectory next to the notebook and toggles recording from the menu', async ({
    page,
    tmpPath
  }) => {
    const exports: string[] = [];
    page.on('request', request => {
      if (request.url().includes('/themisto/api/export')) {
        exports.push(request.url());
      }
    });
    await page.notebook.createNew('export me.ipynb');
    await page.notebook.setCell(0, 'code', 'a = 1');
    await page.notebook.runCell(0, { inplace: true });
    const item = page.locator(STATUS_ITEM);
    await expect(item).toHaveAttribute('data-steps', '1', { timeout: 15000 });

    // The export is saved beside the notebook, where the file browser shows it.
    await page.menu.clickMenuItem("Themisto>Export This Notebook's Trajectory");
    await expect
      .poll(() => page.filebrowser.isFileListedInBrowser('export_me.jsonl'), {
        timeout: 15000
      })
      .toBe(true);
    const saved = await page.request.get(
      `/api/contents/${tmpPath}/export_me.jsonl?type=file&format=text&content=1`
    );
    const lines = ((await saved.json()).content as string)
      .split('\n')
      .filter(line => line.trim() !== '');
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toMatchObject({ step: 1, code: 'a = 1' });
    // Read with the token in a header: no URL carries it.
    expect(exports).toHaveLength(1);
    expect(exports[0]).not.toContain('token=');
    // A second export never overwrites the first.
    await page.menu.clickMenuItem("Themisto>Export This Notebook's Trajectory");
    await expect
      .poll(() => page.filebrowser.isFileListedInBrowser('export_me-1.jsonl'), {
        timeout: 15000
      })
      .toBe(true);

    // Toggle recording: the status bar follows; only "off" is written into
    // the notebook, turning it on again removes it.
    expect(await themistoMetadata(page)).toBeNull();
    await page.menu.clickMenuItem('Themisto>Toggle Recording');
    await expect(item).toHaveAttribute('data-recording', 'false', {
      timeout: 10000
    });
    await expect
      .poll(() => themistoMetadata(page))
      .toEqual({ recording: false });
    // The menu must be closed before it is opened again.
    await expect(page.locator('.lm-Menu')).toHaveCount(0);
    await page.menu.clickMenuItem('Themisto>Toggle Recording');
    await expect(item).toHaveAttribute('data-recording', 'true', {
      timeout: 10000
    });
    // The choice is remembered once the server answered the switch.
    await expect.poll(() => themistoMetadata(page)).toBeNull();
  });
});
