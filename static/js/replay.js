// Wiring of the replay page (/r/<moves>): step through a finished game the server has read.
// The positions and mistakes come from the page (data-replay); nothing is worked out here.
import { createBoard } from "./board.js";
import { createReview } from "./review.js";

const root = document.getElementById("replay");
const replay = JSON.parse(root.dataset.replay);
const { moves, positions } = replay;
const last = moves.length;

const state = { ply: last };

const board = createBoard(document.getElementById("board"), document.getElementById("strike"));
const review = createReview(document.getElementById("review"), {
  onStep: step,
  onShow: (side) => go(replay.review[side].ply + 1),
});

/** The position after `ply` moves, shaped like a snapshot for the board. */
function position(ply) {
  const end = ply === last;
  let status = "replay";
  if (end && replay.over) status = replay.winner ? "won" : "draw";
  return {
    board: positions[ply],
    moves: moves.slice(0, ply),
    line: end ? replay.line : null,
    winner: end ? replay.winner : null,
    status,
    turn: null,
  };
}

/** The mistake made by the move that led to the position after `ply`, if it was one. */
function mistakeAt(ply) {
  return Object.values(replay.review).find((mistake) => mistake && mistake.ply + 1 === ply);
}

function go(ply) {
  const target = Math.max(0, Math.min(last, ply));
  const forward = target === state.ply + 1;
  state.ply = target;
  board.render(position(target), { fresh: forward ? moves[target - 1] : null });
  const mistake = mistakeAt(target);
  board.flag(mistake ? { mistake: mistake.cell, better: mistake.best } : {});
  board.replaying(target !== last);
  review.at(target, moves);
}

function step(to) {
  const targets = { first: 0, back: state.ply - 1, forward: state.ply + 1, last };
  if (to in targets && targets[to] !== state.ply) go(targets[to]);
}

// The page arrives at the final position, drawn by the server; this adds the stepping.
review.open({
  moves,
  sides: moves.map((cell) => positions[last][cell]), // the final board shows whose each move was
  summary: document.querySelector('[data-review="summary"]').textContent,
  href: `${location.origin}/r/${moves.join("")}`,
});
review.fill(replay.review);
review.at(last, moves);
