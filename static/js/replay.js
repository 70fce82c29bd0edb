// Wiring of the replay pages (/r/<moves>, /r/u/<moves>): step through a game the server has
// read. Every position (and in ultimate its small boards and where the mover had to play) and
// the mistakes come from the page (data-replay); nothing is worked out here.
import { createBoard } from "./board.js";
import { createReview } from "./review.js";

const root = document.getElementById("replay");
const replay = JSON.parse(root.dataset.replay);
const { moves, positions } = replay;
const last = moves.length;
const ultimate = root.dataset.variant === "ultimate";
const byId = (id) => document.getElementById(id);

const state = { ply: last };

const board = ultimate
  ? (await import("./ultimate.js")).createUltimateBoard(byId("ultimate"), byId("ultimate-strike"))
  : createBoard(byId("board"), byId("strike"));
const review = createReview(byId("review"), {
  onStep: step,
  onShow: (side) => go(replay.review[side].ply + 1),
});

/** The position after `ply` moves, shaped like a view for the board. */
function position(ply) {
  const end = ply === last;
  let status = "replay";
  if (end && replay.over) status = replay.winner ? "won" : "draw";
  return {
    board: positions[ply],
    boards: replay.boards?.[ply],
    next: replay.next?.[ply] ?? null,
    targets: replay.targets?.[ply] ?? [],
    moves: moves.slice(0, ply),
    line: end ? replay.line : null,
    winner: end ? replay.winner : null,
    status,
    turn: null,
  };
}

/** The mistake made by the move that led to the position after `ply`, if it was one. */
function mistakeAt(ply) {
  return Object.values(replay.review ?? {}).find((mistake) => mistake && mistake.ply + 1 === ply);
}

function go(ply, { fresh } = {}) {
  const target = Math.max(0, Math.min(last, ply));
  const forward = target === state.ply + 1;
  state.ply = target;
  board.render(position(target), { fresh: fresh ?? (forward ? moves[target - 1] : null) });
  const mistake = mistakeAt(target);
  board.flag(mistake ? { mistake: mistake.cell, better: mistake.best } : {});
  board.replaying(target !== last);
  review.at(target, moves);
}

function step(to) {
  const targets = { first: 0, back: state.ply - 1, forward: state.ply + 1, last };
  if (to in targets && targets[to] !== state.ply) go(targets[to]);
}

// "Show cell numbers": each square shows the number a bot returns, and so does each move.
byId("show-cells")?.addEventListener("change", (event) => {
  root.classList.toggle("show-cells", event.target.checked);
});

// The page arrives at the final position, drawn by the server; this adds the stepping.
review.open({
  moves,
  sides: moves.map((cell) => positions[last][cell]), // the final board shows whose each move was
  summary: document.querySelector('[data-review="summary"]').textContent,
  href: `${location.origin}${location.pathname}`, // this page's own link
  variant: ultimate ? "ultimate" : undefined,
});
if (replay.review) review.fill(replay.review);
if (ultimate) go(last, { fresh: null }); // the classic board is drawn by the server already
else review.at(last, moves);
