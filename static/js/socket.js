// Transport: one Socket.IO connection, and call(event, payload) -> Promise<answer>.
import { io } from "../vendor/socket.io.esm.min.js";

const TIMEOUT_MS = 8000;

/** An answer shaped like the server's refusals, for failures the client sees itself. */
function refusal(code) {
  return { ok: false, error: { code, message: "" } };
}

/** A watch-only game link (`?watch=1`, PROTOCOL v5): its joins never take a free seat. */
function watchOnly() {
  return new URLSearchParams(location.search).get("watch") === "1";
}

/**
 * Connect to the server. Handlers are registered here, once: registering them
 * inside the connect callback would add them again on every reconnect.
 */
export function connect({
  onConnect, onDisconnect, onGame, onRecord, onRematch, onReaction, onJoined, joining,
  onWatchers,
}) {
  // WebSocket straight away (one round trip fewer before the board works), long-polling if a
  // proxy or a firewall will not have it.
  // Protocol version 5: views may name a bot as {name, bot: true} (words.js reads both forms),
  // and the join rides the connect: `joining()` names the game (null: the last one) and, with
  // nothing on screen yet, the game to start when there is none (`start`), read on every
  // connect and reconnect; its answer comes as `joined` before `connect` fires.
  const socket = io({
    autoConnect: false, transports: ["websocket", "polling"], tryAllTransports: true,
    auth: (send) => send({ protocol: 5, ...joining(), ...(watchOnly() ? { watch: true } : {}) }),
  });

  socket.on("connect", () => onConnect());
  // A disconnect of our own making (below) is a reconnect under way.
  socket.on("disconnect", (reason) => onDisconnect({
    retrying: socket.active || reason === "io client disconnect",
  }));
  socket.on("connect_error", () => onDisconnect({ retrying: socket.active }));
  socket.on("game", (game) => onGame(game));
  socket.on("record", (record) => onRecord(record));
  socket.on("rematch", (push) => onRematch(push));
  socket.on("reaction", (push) => onReaction(push));
  socket.on("joined", (answer) => onJoined(answer));
  socket.on("watchers", (push) => onWatchers?.(push));

  /** Send an event and resolve with the server's answer; never rejects. */
  function call(event, payload, timeout = TIMEOUT_MS) {
    // Socket.IO would buffer the event and send it on reconnect: a move made
    // blind, long after the player saw the board. Refuse it now instead.
    if (!socket.connected) return Promise.resolve(refusal("offline"));
    return new Promise((resolve) => {
      socket.timeout(timeout).emit(event, payload, (error, answer) => {
        if (error) resolve(refusal("timeout"));
        else if (answer === null || typeof answer !== "object") resolve(refusal("bad_answer"));
        else resolve(answer);
      });
    });
  }

  // The browser knows when the network comes back: try at once rather than at the end of the
  // back-off, which grows to seconds while offline. (Going offline closes the connection by
  // itself: the client listens for that.)
  window.addEventListener("online", () => {
    if (!socket.connected) socket.disconnect().connect();
  });

  socket.connect();
  return { call };
}
