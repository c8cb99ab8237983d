/*
 * The status page `sluice run` serves at / (a first version: the page
 * itself, rendering RunStatus from /healthz live, comes with the status
 * page's own work). No build step, no outside resource.
 */

/** The HTML of the status page: it reads /healthz and shows it. */
export function statusPageHtml(): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>sluice run</title></head>
<body><h1>sluice run</h1><pre id="status">loading /healthz ...</pre>
<script>
async function refresh() {
  try {
    const r = await fetch('/healthz', { cache: 'no-store' });
    document.getElementById('status').textContent = JSON.stringify(await r.json(), null, 2);
  } catch (e) {
    document.getElementById('status').textContent = 'cannot read /healthz: ' + e;
  }
}
refresh();
setInterval(refresh, 2000);
</script></body></html>
`;
}
