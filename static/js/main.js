// Wiring: finds the page's pieces, builds each part, and connects them to the server and to the
// session (the game on screen). Nothing here knows a rule of the game.
import { connect } from "./socket.js";
import { createBoard, createBoards } from "./board.js";
import { createStatus, refusalText } from "./status.js";
import { createControls } from "./controls.js";
import { createLearn, loadEvaluations } from "./learn.js";
import { createReview } from "./review.js";
import { createSound } from "./sound.js";
import { createCoach } from "./coach.js";
import { createSeats } from "./seats.js";
import { createClock } from "./clock.js";
import { createOffer } from "./offer.js";
import { createReactions } from "./reactions.js";
import { createSession } from "./session.js";

const byId = (id) => document.getElementById(id);

// A language just chosen in the menu (`/?lang=de`): the shell kept for the next visit is fetched
// again, in it. A worker installing as the choice was made kept the page it had fetched before,
// in the language before, and the next visit would open in that.
const chosenLanguage = new URLSearchParams(location.search).has("lang");

/**
 * A part whose module is loaded the first time one of its methods is called (the first visit
 * stays light); `idle`: what a method does before then, when calling it must not load it.
 */
function later(load, idle = {}) {
  let made = null;
  return new Proxy({}, {
    get: (_, name) => (...args) => {
      if (!made && name in idle) return idle[name](...args);
      made ??= load();
      return made.then((part) => part[name](...args));
    },
  });
}
// The opponent's absence line: its module comes with the first friend game with a seat away.
let absence = null;
function absent(game) {
  if (!absence && (game.mode !== "friend" || !Object.values(game.online ?? {}).includes(false))) return;
  absence ??= import("./absence.js").then((module) => module.createAbsence(
    { line: byId("absence"), news: byId("absence").parentElement }));
  absence.then((part) => part.render(game));
}
const chips = { X: byId("player-x"), O: byId("player-o") };
let session = null; // the parts below reach it only once a player acts, after it is built
const calm = window.matchMedia("(prefers-reduced-motion: reduce)");

const status = createStatus({
  status: byId("status"), detail: byId("detail"), notice: byId("notice"),
  announcer: byId("announce"), banner: byId("connection"), bannerText: byId("connection-text"),
  record: byId("record"), joined: byId("joined"),
});
// The classic 3x3 or the ultimate 9x9, whichever game is on screen.
const board = createBoards({
  classic: {
    wrap: byId("board-wrap"),
    make: (onPlay) => createBoard(byId("board"), byId("strike"), { onPlay }),
  },
  ultimate: {
    wrap: byId("ultimate-wrap"),
    make: async (onPlay) => (await import("./ultimate.js"))
      .createUltimateBoard(byId("ultimate"), byId("ultimate-strike"), { onPlay }),
  },
}, { onPlay: (cell) => session.play(cell), app: byId("app") });
const learn = createLearn(
  { evaluations: byId("evaluations"), hint: byId("hint-button"), count: byId("hint-count"),
    note: byId("learn-note"), advice: byId("hint-advice"), legend: byId("evaluations-legend") },
  {
    onEvaluations: (on) => coach.switchEvaluations(on),
    onHint: () => coach.hint(session.show),
  },
);
const evaluations = loadEvaluations();
learn.reflect(evaluations);
const review = createReview(byId("review"), {
  onStep: (to) => coach.step(to),
  onShow(side) {
    if (coach.showMistake(side)) byId("board-wrap").scrollIntoView({ block: "nearest" });
  },
  async onTry(side) {
    status.clearNotice();
    await coach.tryAgain(side, controls.read().level);
  },
});
// The board's replay belongs to the review: away from it, the board shows how the game ended.
// The tabs come with the first finished game: their module is loaded then.
const deck = later(() => import("./deck.js").then((module) => module.createDeck(
  byId("deck-tabs"), { onLeave: (page) => page === "deck-review" && coach.step("last") })),
{ playing: () => {} });
const coach = createCoach({ board, learn, review, deck, evaluations }, {
  call: (event, payload) => session.call(event, payload),
  now: () => session.now(),
  onPractice(answer) {
    session.enter(answer, { opening: true });
    board.focus(); // the card that held the button is gone; the board is where play goes on
  },
  notice: status.notice,
  refusal: refusalText,
  news: status.news,
  announce: status.announce,
});
const controls = createControls(
  { form: byId("settings"), newGame: byId("new-game") },
  { onSettings: (settings) => session.settings(settings),
    onNewGame: (settings) => session.newGame(settings) },
);
const offer = createOffer(
  { row: byId("actions"), text: byId("offer-text"),
    buttons: Object.fromEntries(
      ["rematch", "claim", "resign", "abort", "accept", "decline", "withdraw", "follow"]
        .map((name) => [name, byId(name)])) },
  { onRematch: () => session.rematch(), onClaim: () => session.claim(),
    onResign: () => session.resign(), onAbort: () => session.abort(),
    onDecline: () => session.decline(), onFollow: () => session.follow(),
    onClaimDue: () => session.claimDue() },
);

session = createSession({
  status, coach, board, controls, offer, learnRow: byId("learn"), practice: byId("practice"),
  seats: createSeats(
    { chips, series: byId("series"), score: byId("score"), watching: byId("watching") },
    { onRename: (name) => session.rename(name) }),
  clock: createClock(chips, { onLow: (text) => status.announce(text) }),
  absence: { render: absent },
  reactions: createReactions(byId("reactions"), chips, {
    onReact: (reaction) => session.react(reaction),
  }),
  share: later(() => import("./share.js").then((module) => module.createShare(byId("share"))),
    { hide: () => {} }), // hidden until the first friend game waits for its friend

  sound: createSound(byId("sound")),
  leave: later(() => import("./leave.js").then((module) => module.createLeave(byId("leave")))),
}, { call: (event, payload) => server.call(event, payload), app: byId("app"), calm });

// A finger on the screen: no keyboard hints from then on (the media queries miss some phones).
window.addEventListener("pointerdown", (event) => {
  if (event.pointerType === "touch") document.documentElement.classList.add("is-touch");
}, { passive: true });

// What the first load leaves for later (the games list, the service worker): the board first.
const AFTER_READY_MS = 1500;

// The last game of this device on screen at once, read only, while the socket comes up.
session.restore();

// The service worker (the page shell offline) once the board is usable: its precache never
// competes with the first load.
byId("app").addEventListener("ttt:ready", () => {
  if (!("serviceWorker" in navigator)) return;
  setTimeout(() => navigator.serviceWorker.register("/sw.js").catch(() => {}), AFTER_READY_MS);
  if (chosenLanguage) navigator.serviceWorker.ready.then(refreshShell).catch(() => {});
}, { once: true });

/** The `/` shell in every cache of the worker's, fetched again (the cookie's language). */
async function refreshShell() {
  const names = (await caches.keys()).filter((name) => name.startsWith("ttt-"));
  const shell = () => new Request("/", { cache: "no-cache" });
  await Promise.all(names.map(async (name) => (await caches.open(name)).add(shell())));
}

// "Your games": the player's live friend games, asked for with every game entered and when
// the page is looked at again (its module comes then, after the board).
const games = later(() => import("./games.js").then((module) => module.createGames(
  { section: byId("my-games"), list: byId("my-games-list") },
  { call: (event, payload) => server.call(event, payload) })));
let entered = 0; // the first game's list waits until the board has been usable a moment
byId("app").addEventListener("ttt:entered", (event) => {
  entered += 1;
  if (entered > 1) games.refresh(event.detail);
  else setTimeout(() => games.refresh(event.detail), AFTER_READY_MS);
});
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible" && byId("app").dataset.ready) games.refresh(null);
});

const server = connect({
  onConnect: () => session.connected(),
  onDisconnect: (how) => session.disconnected(how),
  onGame: (game) => session.pushed(game),
  onRecord: (record) => session.recorded(record),
  onRematch: (push) => session.rematched(push),
  onReaction: (push) => session.reacted(push),
  onJoined: (answer) => session.joined(answer),
  joining: () => session.joining(),
  onWatchers: (push) => session.watched(push),
});
