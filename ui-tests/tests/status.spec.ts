import { expect, test } from '@jupyterlab/galata';

const STATUS_ITEM = '.themisto-StatusItem';

test.describe('Themisto status bar item', () => {
  test('counts executed cells and toggles recording', async ({ page }) => {
    await page.notebook.createNew();

    await page.notebook.setCell(0, 'code', 'x = 1');
    await page.notebook.addCell('code', 'y = x + 1');
    // Run in place (no "run and advance" inserting an empty cell), one at a time.
    await page.notebook.runCell(0, { inplace: true });
    await page.notebook.runCell(1, { inplace: true });

    const item = page.locator(STATUS_ITEM);
    await expect(item).toHaveCount(1);
    // The server ingests executions asynchronously: poll the item.
    await expect(item).toHaveAttribute('data-steps', '2', { timeout: 15000 });
    await expect(item).toHaveAttribute('data-recording', 'true');
    await expect(item).toHaveText('Themisto: recording · 2 steps');

    // Closing the notebook tab loses nothing: the server already holds the steps.
    const kernelId = await page.evaluate(() => {
      const widget = window.jupyterapp.shell.currentWidget as unknown as {
        sessionContext: { session: { kernel: { id: string } } };
      };
      return widget.sessionContext.session.kernel.id;
    });
    const before = await page.request.get(`/themisto/api/kernels/${kernelId}`);
    expect((await before.json()).steps).toBe(2);

    await item.click();
    await expect(item).toHaveAttribute('data-recording', 'false', {
      timeout: 10000
    });
    await expect(item).toHaveText('Themisto: off');

    // The choice is the notebook's: a new kernel for it starts with recording off.
    const newKernelId = await page.evaluate(async () => {
      const widget = window.jupyterapp.shell.currentWidget as unknown as {
        sessionContext: {
          changeKernel(options: { name: string }): Promise<{ id: string }>;
        };
      };
      const kernel = await widget.sessionContext.changeKernel({
        name: 'python3'
      });
      return kernel.id;
    });
    expect(newKernelId).not.toBe(kernelId);
    await expect(item).toHaveAttribute('data-recording', 'false', {
      timeout: 10000
    });
    await page.notebook.runCell(0, { inplace: true });
    const fresh = await page.request.get(
      `/themisto/api/kernels/${newKernelId}`
    );
    const freshModel = await fresh.json();
    expect(freshModel.recording).toBe(false);
    expect(freshModel.steps).toBe(0);

    await page.notebook.close();
    const after = await page.request.get(`/themisto/api/kernels/${kernelId}`);
    expect(after.ok()).toBe(true);
    const model = await after.json();
    expect(model.steps).toBe(2);
    expect(model.recording).toBe(false);
  });
});
