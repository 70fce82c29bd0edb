// What the board carries besides the game, and the review: evaluations of the moves, hints,
// a finished game's review stepped through on the board. Which of them the viewer may have
// comes from the view's `can` (hint, analyze, move); the verdicts come from the server.
import { cellsWords, t, tn } from "./squares.js";
import { createReviewer } from "./reviewer.js";

/** Whether the same game at the same version as `game`. */
function current(mark, game) {
  return Boolean(mark) && mark.id === game.id && mark.version === game.version;
}

/** Why hints and evaluations are not offered in `game` (its `can` has neither), or "". */
function whyNot(game) {
  const can = game.can ?? [];
  if (can.includes("hint") || can.includes("analyze")) return "";
  if (game.you === "spectator") return t("You are watching: hints and evaluations are for the players");
  // Once the game is over the review is open: no need to promise it.
  if (game.status !== "playing") return t("No hints or evaluations in this game");
  return t("No hints or evaluations in this game: the review opens when it ends");
}

/**
 * Wire the board, the learning controls, the review card and the deck. `call(event, payload)`
 * asks the server; `now()` -> {game, busy}: the view on screen and whether a move is out;
 * `onPractice(answer)`: a new game from a review's mistake started; `notice(text)`, `news`,
 * `announce`: the status line's words.
 */
export function createCoach({ board, learn, review, deck, evaluations }, {
  call, now, onPractice, notice, refusal, news, announce,
}) {
  const state = {
    evaluations,         // the switch is on
    analysis: null,      // {id, version, moves}: the analyze answer for the view on screen
    asking: null,        // "id:version" of the evaluations call on its way
    hint: null,          // {id, version, cells, advice}: the last hint, shown until the next move
    review: null,        // {id, positions, mistakes, ply, evaluations}: a finished game's
                         // review; ply on screen; evaluations: of past positions, by ply
    reviewAsking: null,  // id of the game whose review is on its way
    pastTimer: 0,        // a past position is asked about once the stepping pauses
  };

  /** Whether the board should carry evaluations now: only ever for the viewer's own move. */
  function wantsEvaluations(game) {
    const can = game.can ?? [];
    return state.evaluations && can.includes("analyze") && can.includes("move") && !now().busy;
  }

  /** The review's position when it is not the end of the game, else null. */
  function replayPly(game) {
    const { review: seen } = state;
    if (!seen || seen.id !== game.id || !seen.positions) return null;
    return seen.ply === game.moves.length ? null : seen.ply;
  }

  /** The board: the game, or the position the review is on, with what goes on top of it. */
  function paintBoard(game, fresh) {
    const ply = replayPly(game);
    if (ply === null) {
      board.render(game, { playable: Boolean(game.can?.includes("move")), fresh });
    } else {
      // A past position, straight from the server's list: nothing to play, nothing won yet.
      board.render({
        board: state.review.positions[ply], moves: game.moves.slice(0, ply), line: null,
        winner: null, status: "replay", turn: null, variant: game.variant,
        boards: state.review.boards?.[ply], next: state.review.next?.[ply] ?? null,
        targets: state.review.targets?.[ply] ?? [],
      }, { fresh });
    }
    board.replaying(ply !== null);
    if (state.review?.id === game.id && game.status !== "playing") {
      const at = ply ?? game.moves.length;
      const mistake = Object.values(state.review.mistakes ?? {}).find((m) => m && m.ply + 1 === at);
      board.flag(mistake ? { mistake: mistake.cell, better: mistake.best } : {});
      // A past position can carry its evaluations too, for the side to move there; not where
      // a mistake is flagged, whose "better" squares are the other side's.
      const evaluating = ply !== null && !mistake && !whyNot(game) && state.evaluations
        && Boolean(game.can?.includes("analyze"));
      const known = evaluating ? state.review.evaluations?.[ply] : null;
      board.evaluate(known ?? null);
      clearTimeout(state.pastTimer);
      if (evaluating && !known) state.pastTimer = setTimeout(() => askPast(game, ply), 120);
      return;
    }
    const evaluating = wantsEvaluations(game);
    board.evaluate(evaluating && current(state.analysis, game) ? state.analysis.moves : null);
    board.suggest(current(state.hint, game) ? state.hint.cells : []);
    if (evaluating && !current(state.analysis, game)) askEvaluations(game);
  }

  /** The switch and Hint under the board, or why they are not there. */
  function offerLearning(game) {
    const hints = game.hints ?? { X: 0, O: 0 };
    const why = whyNot(game);
    learn.offer({
      why,
      canHint: Boolean(game.can?.includes("hint")) && !now().busy,
      // The server's count: one per position, however often Hint is pressed there.
      used: game.you === "both" ? hints.X + hints.O : (hints[game.you] ?? 0),
      advice: current(state.hint, game) ? state.hint.advice : "",
      legend: state.evaluations && !why,
    });
  }

  /** Ask the server what each move leads to, for the board on screen. */
  async function askEvaluations(game) {
    const key = `${game.id}:${game.version}`;
    if (state.asking === key) return;
    state.asking = key;
    const answer = await call("analyze", { game: game.id });
    if (state.asking === key) state.asking = null;
    if (!answer.ok) {
      if (answer.error?.code !== "unavailable") notice(refusal(answer.error, "analyze"));
      return;
    }
    const { game: shown } = now();
    if (!shown || !current({ id: game.id, version: game.version }, shown)) return;
    if (!wantsEvaluations(shown)) return;
    // The answer is about the game as the server has it now: use it only if that is the
    // board on screen (the same side to move, the same number of moves, on empty squares).
    const { turn, moves } = answer.analysis;
    if (turn !== shown.turn || (answer.version ?? shown.moves.length) !== shown.moves.length
        || moves.some((m) => shown.board[m.cell] !== ".")) {
      return;
    }
    state.analysis = { id: game.id, version: game.version, moves };
    paintBoard(shown);
  }

  /** Ask what each move leads to in the position after `ply` of a finished game. */
  async function askPast(game, ply) {
    const seen = state.review;
    const answer = await call("analyze", { game: game.id, ply });
    if (!answer.ok) {
      if (answer.error?.code !== "unavailable") notice(refusal(answer.error, "analyze"));
      return;
    }
    if (state.review !== seen || answer.ply !== ply || answer.version !== game.version) return;
    seen.evaluations[ply] = answer.analysis.moves;
    const { game: shown } = now();
    if (seen.ply === ply && shown?.id === game.id) paintBoard(shown);
  }

  /** Everything the coach puts on the page for `game`; `fresh` as for board.render. */
  function paint(game, fresh) {
    paintBoard(game, fresh);
    offerLearning(game);
    reviewer.offer(game);
  }

  const reviewer = createReviewer({ state, review, deck }, {
    call, now, paint, paintBoard, onPractice, notice, refusal,
  });

  return {
    paint,
    paintBoard,
    step: (to) => reviewer.step(to),
    showMistake: (side) => reviewer.showMistake(side),
    tryAgain: (side, level) => reviewer.tryAgain(side, level),

    /** Whether the board shows a past position of `game` (the review is being read). */
    reviewing(game) {
      return replayPly(game) !== null;
    },

    /** The evaluations switch was turned. */
    switchEvaluations(on) {
      state.evaluations = on;
      const { game } = now();
      if (game) paint(game);
    },

    /** Take a hint: the best squares for the side on move, marked until the next move. */
    async hint(show) {
      const { game, busy } = now();
      if (!game || busy || !game.can?.includes("hint")) return;
      const lessons = import("./lessons.js"); // the advice in words, fetched beside the answer
      const answer = await call("hint", { game: game.id });
      if (!answer.ok) {
        notice(refusal(answer.error, "hint"));
        return;
      }
      // The sentence that teaches, in the page's words from the answer's moves (else the server's).
      const { adviceWords } = await lessons;
      if (now().game?.id !== game.id) return;
      const advice = adviceWords(answer);
      state.hint = { id: game.id, version: answer.game.version, cells: answer.best, advice };
      show(answer.game);
      if (now().game.version !== answer.game.version) return;
      if (advice) {
        // The server's one sentence that teaches, under the board beside the button pressed.
        announce(t("Hint: {advice}", { advice }));
        return;
      }
      const { best } = answer;
      const estimated = game.variant === "ultimate" ? t(" · estimated by search") : "";
      // An empty `best`: nothing the search could vouch for in its time (PROTOCOL v4).
      let words = t("Hint: no move evaluated in time — try again") + estimated;
      if (best.length > 2) {
        words = tn("Hint: {n} move as good as each other", "Hint: {n} moves as good as each other",
          best.length) + estimated;
      } else if (best.length) {
        const cells = cellsWords(best, game.variant);
        // Translators: {cells} squares ("the top left or the centre")
        words = (best.length === 1 ? t("Hint: play {cells}", { cells }) : t("Hint: {cells}", { cells }))
          + estimated;
      }
      news(words);
      announce(words);
    },

  };
}
