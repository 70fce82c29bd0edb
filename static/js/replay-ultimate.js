// Wiring of the ultimate replay page (/r/u/<moves>): step through a game the server has read.
// Every position, its small boards and where the mover had to play come from the page
// (data-replay); nothing is worked out here.
import { createUltimateBoard } from "./ultimate.js";
import { createReview } from "./review.js";

const root = document.getElementById("replay");
const replay = JSON.parse(root.dataset.replay);
const { moves, positions } = replay;
const last = moves.length;

const state = { ply: last };

const board = createUltimateBoard(
  document.getElementById("ultimate"), document.getElementById("ultimate-strike"));
const review = createReview(document.getElementById("review"), { onStep: step });

/** The position after `ply` moves, shaped like a view for the board. */
function position(ply) {
  const end = ply === last;
  let status = "replay";
  if (end && replay.over) status = replay.winner ? "won" : "draw";
  return {
    board: positions[ply],
    boards: replay.boards[ply],
    next: replay.next[ply],
    moves: moves.slice(0, ply),
    line: end ? replay.line : null,
    winner: end ? replay.winner : null,
    status,
    turn: null,
  };
}

function go(ply, { fresh } = {}) {
  const target = Math.max(0, Math.min(last, ply));
  const forward = target === state.ply + 1;
  state.ply = target;
  board.render(position(target), { fresh: fresh ?? (forward ? moves[target - 1] : null) });
  board.replaying(target !== last);
  review.at(target, moves);
}

function step(to) {
  const targets = { first: 0, back: state.ply - 1, forward: state.ply + 1, last };
  if (to in targets && targets[to] !== state.ply) go(targets[to]);
}

review.open({
  moves,
  sides: moves.map((cell) => positions[last][cell]), // the final board shows whose each move was
  summary: document.querySelector('[data-review="summary"]').textContent,
  href: `${location.origin}/r/u/${moves.join(".")}`,
  variant: "ultimate",
});
go(last, { fresh: null });
