/**
 * Configuration for Playwright using default from @jupyterlab/galata
 *
 * Browsers are never downloaded: the system Chromium is used
 * (install dependencies with PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1).
 */
const baseConfig = require('@jupyterlab/galata/lib/playwright-config');

// The server's port: THEMISTO_UI_PORT (default 8888), so two work trees can
// run the UI tests at once. jupyter_server_test_config.py reads the same.
const port = process.env.THEMISTO_UI_PORT || '8888';
const baseURL = `http://localhost:${port}`;

module.exports = {
  ...baseConfig,
  // Never open/serve the HTML report: it would block a non-interactive run.
  reporter: [
    ['list'],
    ['html', { open: 'never' }],
    [
      'json',
      {
        outputFile:
          process.env.THEMISTO_REPORT_JSON || '../.artifacts/galata.json'
      }
    ]
  ],
  // Expectations poll their condition until it holds; on a machine whose
  // cores are busy (a kernel computing, CI's other jobs) the page can take
  // longer than Playwright's default 5 s to draw, so they may wait up to 30 s
  // (a passing check still returns as soon as it holds).
  expect: { ...baseConfig.expect, timeout: 30000 },
  // One retry on CI, as ipywidgets and JupyterLite do: a test that passes only on its
  // retry still counts, but scripts/summary.py names it at the end of the log.
  retries: process.env.CI ? 1 : 0,
  use: {
    ...baseConfig.use,
    baseURL,
    headless: true,
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH || '/usr/bin/chromium',
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync'
      ]
    },
    video: 'off',
    trace: 'off'
  },
  webServer: {
    command: 'jlpm start',
    url: `${baseURL}/lab`,
    timeout: 120 * 1000,
    reuseExistingServer: !process.env.CI
  }
};
