// The service worker: the page shell and the static files, so that a repeat visit asks the
// network for nothing it already has, and the installed app opens offline to the site's own
// pages. Served at /sw.js by ttt/web/http/pages.py, which fills in VERSION and PRECACHE: a new
// release is a new worker with a new cache, and the old caches are dropped when it takes over.
// - Static files at a versioned address (`?v=`, ttt/web/http/assets.py): cache first; such an
//   address never changes content.
// - The game shell (`/`, `/g/<id>`): stale-while-revalidate: drawn from the cache at once, the
//   network's copy kept for next time. A link never opened here gets the `/` shell offline
//   (the page reads its game from the address).
// - Other pages kept (`/bots`, the guide, replays): network first, the cache when offline.
// Never cached: /socket.io/, /api/ and anything else that carries game data.
const VERSION = "__VERSION__";
const PRECACHE = __PRECACHE__;
const OPTIONAL = __OPTIONAL__; // pages kept for offline reading: their failure fails no install
const CACHE = `ttt-${VERSION}`;

const SHELL = /^\/(g\/[A-Za-z0-9_-]{16,64})?$/;
const PAGES = /^\/(bots|bots\/guide|bot\/[^/]+|r\/[0-8]{1,9}|r\/u\/[0-9.]{1,300})$/;

/** How this worker answers `url` (same origin): "static", "shell", "page", or null (network). */
function kind(url) {
  if (url.origin !== self.location.origin) return null;
  const path = url.pathname;
  if (path.startsWith("/static/")) return url.searchParams.has("v") ? "static" : "page";
  // A query (?lang=fr) asks the server for something new: the network says what.
  if (SHELL.test(path)) return url.search ? "page" : "shell";
  if (PAGES.test(path) || path === "/manifest.webmanifest") return "page";
  return null;
}

self.addEventListener("install", (event) => {
  // All or nothing; the versioned files come from the HTTP cache when a visit loaded them.
  event.waitUntil(caches.open(CACHE)
    .then((cache) => cache.addAll(PRECACHE.map((path) => new Request(path,
      { cache: path.includes("?v=") ? "default" : "no-cache" })))
      .then(() => Promise.allSettled(OPTIONAL.map((path) => cache.add(
        new Request(path, { cache: "no-cache" }))))))
    .then(() => self.skipWaiting()));
});

self.addEventListener("activate", (event) => {
  event.waitUntil(caches.keys()
    .then((names) => Promise.all(names.filter((name) => name.startsWith("ttt-") && name !== CACHE)
      .map((name) => caches.delete(name))))
    .then(() => self.clients.claim()));
});

/** The network's answer, kept under `key` when it is a good one of our own. */
async function fetched(request, key) {
  const response = await fetch(request);
  if (response.ok && response.type === "basic") {
    const copy = response.clone();
    caches.open(CACHE).then((cache) => cache.put(key, copy));
  } else if (response.status === 404 || response.status === 410) {
    caches.open(CACHE).then((cache) => cache.delete(key)); // a link gone stays gone
  }
  return response;
}

/** A versioned static file: the cache, else the network (kept). A release gone: any version. */
async function cacheFirst(request) {
  const cache = await caches.open(CACHE);
  const found = await cache.match(request.url);
  if (found) return found;
  try {
    return await fetched(request, request.url);
  } catch {
    return (await cache.match(request.url, { ignoreSearch: true })) ?? Response.error();
  }
}

/** The shell: the cached copy at once and a fresh one for next time, else the network. */
async function shell(event, key) {
  const cache = await caches.open(CACHE);
  const found = await cache.match(key);
  const fresh = fetched(event.request, key);
  if (found) {
    event.waitUntil(fresh.catch(() => {}));
    return found;
  }
  try {
    return await fresh;
  } catch {
    // A link never opened on this device: the `/` shell, which reads the game from the address.
    return (await cache.match(`${self.location.origin}/`)) ?? Response.error();
  }
}

/** Network first; the cached copy when the network fails. */
async function networkFirst(request, key) {
  try {
    return await fetched(request, key);
  } catch {
    const cache = await caches.open(CACHE);
    return (await cache.match(key)) ?? Response.error();
  }
}

self.addEventListener("fetch", (event) => {
  const { request } = event;
  if (request.method !== "GET") return;
  const url = new URL(request.url);
  const how = kind(url);
  if (!how) return;
  // One copy per shell address: a shell asked for with a query replaces the one kept.
  const key = SHELL.test(url.pathname) ? url.origin + url.pathname : url.href;
  if (how === "static") event.respondWith(cacheFirst(request));
  else if (how === "shell" && request.mode === "navigate") event.respondWith(shell(event, key));
  else event.respondWith(networkFirst(request, key));
});
