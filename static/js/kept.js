// The games this device keeps (localStorage): the last one, drawn before the socket is up and
// offline, and the last few by id, so that a link opened again shows its own game.
const LAST_GAME = "ttt.last-game";
const GAMES = "ttt.games"; // id -> {game, link}: the last few games seen here, for their links
const KEPT_GAMES = 8;

/** The game a `/g/<id>` address names (the `/` shell answers for a link offline), or null. */
export function addressGame() {
  return location.pathname.match(/^\/g\/([A-Za-z0-9_-]{16,64})$/)?.[1] ?? null;
}

/** True on a watch-only link (`?watch=1`, PROTOCOL v5): never take a free seat. */
export function watching() {
  return new URLSearchParams(location.search).get("watch") === "1";
}

/** Keep the view on screen on this device, to draw before the socket is up (and offline). */
export function remember(game, link) {
  if (!game?.id || !game.you) return;
  try {
    localStorage.setItem(LAST_GAME, JSON.stringify({ game, link }));
    const kept = JSON.parse(localStorage.getItem(GAMES) ?? "{}");
    delete kept[game.id];
    const newest = [...Object.entries(kept), [game.id, { game, link }]].slice(-KEPT_GAMES);
    localStorage.setItem(GAMES, JSON.stringify(Object.fromEntries(newest)));
  } catch {
    // Private mode or full: the page simply starts from the server's view.
  }
}

/** The view of game `id` kept by remember(), or null. */
function recalledGame(id) {
  try {
    return JSON.parse(localStorage.getItem(GAMES) ?? "{}")[id] ?? null;
  } catch {
    return null;
  }
}

/** The last view kept by remember(), or null. */
function recalled() {
  try {
    return JSON.parse(localStorage.getItem(LAST_GAME) ?? "null");
  } catch {
    return null;
  }
}

/**
 * What the page may draw before the socket is up ({game, link}, or null): a link's own game
 * if it was seen here (never another one), else on `/` the last game, a friend game only
 * offline, where nothing else can be shown.
 */
export function keptFor(wanted) {
  const last = recalled();
  const saved = wanted ? recalledGame(wanted) ?? (last?.game?.id === wanted ? last : null) : last;
  if (!saved?.game?.id) return null;
  if (navigator.onLine && !wanted && saved.game.mode === "friend") return null;
  return saved;
}
