// The review of a finished game, for the coach: the card opened (and its positions and first
// mistakes asked for) once a game is over, stepping through it on the board, and a practice
// game from just before a mistake. The verdicts come from the server.
import { sidesOf, t } from "./squares.js";
import { summarize } from "./results.js";
import { isolate, nameAt } from "./words.js";

/** Who sat where, for the review's mistakes: {X: "You", O: "AI"}; watchers see names. */
function sideNames(game) {
  const { you } = game;
  if (you !== "X" && you !== "O") {
    if (game.mode !== "friend") return {};
    return Object.fromEntries(["X", "O"].filter((side) => nameAt(game, side))
      .map((side) => [side, isolate(nameAt(game, side))]));
  }
  const other = you === "X" ? "O" : "X";
  let them = isolate(nameAt(game, other)) || t("Friend");
  if (game.mode === "ai") them = t("AI");
  return { [you]: t("You"), [other]: them };
}

/** The full link to a game's replay, from the view's `replay` path; "" before its first move. */
function replayHref(game) {
  return game.replay ? `${location.origin}${game.replay}` : "";
}

/**
 * `parts`: {state (the coach's: `review` lives in it), review, deck, board}; `call`, `now`,
 * `paint`, `paintBoard`, `onPractice`, `notice`, `refusal` as the coach has them.
 */
export function createReviewer({ state, review, deck }, {
  call, now, paint, paintBoard, onPractice, notice, refusal,
}) {
  /** The review card: open (and asked for) once a game is over, closed while one is on. */
  function offer(game) {
    if (game.status === "playing") {
      state.review = null;
      review.close();
      deck.playing();
      return;
    }
    if (state.review?.id !== game.id) {
      state.review = {
        id: game.id, positions: null, mistakes: null, ply: game.moves.length, evaluations: {},
      };
    }
    review.open({
      moves: game.moves,
      sides: sidesOf(game.board, game.moves),
      summary: summarize(game, game.you),
      names: sideNames(game),
      href: replayHref(game),
      variant: game.variant,
    });
    review.at(state.review.ply, game.moves, Boolean(state.review.positions));
    // The card takes the deck once it is whole: filled in after it is on screen, it would grow
    // and push what is under it.
    if (state.review.positions || state.review.failed) deck.over(game.id);
    if (!state.review.positions) askReview(game);
  }

  /** Ask the server for a finished game's positions and first mistakes. */
  async function askReview(game) {
    if (state.reviewAsking === game.id) return;
    state.reviewAsking = game.id;
    const answer = await call("analyze", { game: game.id });
    state.reviewAsking = null;
    const seen = state.review;
    if (!seen || seen.id !== game.id || seen.positions) return;
    if (!answer.ok || answer.positions?.length !== game.moves.length + 1) {
      review.failed();
      seen.failed = true;
      deck.over(game.id);
      return;
    }
    seen.positions = answer.positions;
    seen.mistakes = answer.review;
    seen.boards = answer.boards; // ultimate: each position's small boards and where to play
    seen.next = answer.next;
    seen.targets = answer.targets; // ultimate: each position's boards to play in (PROTOCOL v4)
    review.fill(answer.review, sideNames(game));
    const { game: shown } = now();
    if (shown) paint(shown);
  }

  /** Show the position after `ply` moves of the finished game; its last move is the end. */
  function go(ply) {
    const { game } = now();
    const seen = state.review;
    if (!game || !seen || seen.id !== game.id || !seen.positions || ply === seen.ply) return;
    const forward = ply === seen.ply + 1;
    seen.ply = ply;
    paintBoard(game, forward ? game.moves[ply - 1] : null);
    review.at(ply, game.moves);
  }

  /** Step the review: "first", "back", "forward" or "last". */
  function step(to) {
    const { game } = now();
    const seen = state.review;
    if (!game || !seen || seen.id !== game.id || !seen.positions) return;
    const targets = { first: 0, back: seen.ply - 1, forward: seen.ply + 1, last: game.moves.length };
    go(Math.max(0, Math.min(game.moves.length, targets[to] ?? seen.ply)));
  }

  /** Put a side's first mistake on the board. */
  function showMistake(side) {
    const mistake = state.review?.mistakes?.[side];
    if (!mistake) return false;
    go(mistake.ply + 1);
    return true;
  }

  /** Play on from just before a side's first mistake, against the AI, as that side. */
  async function tryAgain(side, level) {
    const { game } = now();
    const mistake = state.review?.mistakes?.[side];
    if (!game || !mistake || state.review.id !== game.id) return;
    const answer = await call("new_game", {
      mode: "ai", you: side, level: game.level ?? level, moves: game.moves.slice(0, mistake.ply),
      from: game.id, // a finished game: nothing is left (PROTOCOL v4)
    });
    if (!answer.ok) {
      notice(refusal(answer.error, "new_game"));
      return;
    }
    onPractice(answer);
  }

  return { offer, step, showMistake, tryAgain };
}
