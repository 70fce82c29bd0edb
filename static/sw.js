// The service worker: the page shell and the static files, so that the installed app opens
// offline to the site's own page (the last game, read only, and an offline notice). Served at
// /sw.js by ttt/web/http/pages.py, which fills in VERSION and PRECACHE: a new release is a new
// worker with a new cache, and the old caches are dropped when it takes over.
// Never cached: /socket.io/, /api/ and anything else that carries game data. Online, every
// answer comes from the network first (a fresh page is always the server's); the cache is for
// when the network fails.
const VERSION = "__VERSION__";
const PRECACHE = __PRECACHE__;
const CACHE = `ttt-${VERSION}`;

/** Whether `url` (same origin) is something this worker keeps: the shell or a static file. */
function kept(url) {
  if (url.origin !== self.location.origin) return false;
  const path = url.pathname;
  if (path.startsWith("/socket.io/") || path.startsWith("/api/")) return false;
  return path === "/" || /^\/g\/[A-Za-z0-9_-]{16,64}$/.test(path) || path.startsWith("/static/")
    || path === "/manifest.webmanifest";
}

self.addEventListener("install", (event) => {
  // Revalidated against the server (the files are already in the HTTP cache after a first
  // load: mostly 304s), all or nothing.
  event.waitUntil(caches.open(CACHE)
    .then((cache) => cache.addAll(PRECACHE.map((path) => new Request(path, { cache: "no-cache" }))))
    .then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(caches.keys()
    .then((names) => Promise.all(names.filter((name) => name.startsWith("ttt-") && name !== CACHE)
      .map((name) => caches.delete(name))))
    .then(() => self.clients.claim()));
});

self.addEventListener("fetch", (event) => {
  const { request } = event;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  if (!kept(url)) return;
  // Game pages are kept without their query; a game page never seen falls back to the shell.
  const key = url.origin + url.pathname;
  event.respondWith(fetch(request).then((response) => {
    if (response.ok && response.type === "basic") {
      const copy = response.clone();
      caches.open(CACHE).then((cache) => cache.put(key, copy));
    }
    return response;
  }).catch(async () => {
    const cache = await caches.open(CACHE);
    const found = await cache.match(key)
      ?? (request.mode === "navigate" ? await cache.match(`${url.origin}/`) : undefined);
    return found ?? Response.error();
  }));
});
