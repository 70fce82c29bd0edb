// The page's words in the player's language: `config.words`, that language's catalog from
// ttt/translations/ (`make translations`), keyed by ttt.web.i18n.message_key. Marked t("…") and
// tn("…", "…", n) for pybabel: plain strings with {name} placeholders; a missing one reads as
// its English.
const element = document.getElementById("config");
const words = (element && JSON.parse(element.textContent).words) || {};

/** The page's language, BCP 47 ("pt-BR"). */
export const lang = words.lang || document.documentElement.lang || "en";
const messages = words.messages || {};
const plurals = words.plurals || { one: 0, other: 1 }; // CLDR category -> form index
const pluralRules = new Intl.PluralRules(lang);
const numbers = new Intl.NumberFormat(lang);
const utf8 = new TextEncoder();

/** 5 base-36 digits of the FNV-1a hash of the message's UTF-8 (as message_key). */
function key(msgid) {
  let value = 0x811c9dc5;
  for (const byte of utf8.encode(msgid)) value = Math.imul(value ^ byte, 0x01000193) >>> 0;
  let digits = "";
  for (let i = 0; i < 5; i += 1) {
    digits += (value % 36).toString(36);
    value = Math.floor(value / 36);
  }
  return digits;
}

function fill(text, params) {
  return params ? text.replace(/\{(\w+)\}/g, (all, name) => (name in params ? params[name] : all))
    : text;
}

/** A number as the language writes it ("1.234", "١٢"). */
export function number(n) {
  return numbers.format(n);
}

/** The message in the page's language, its {placeholders} filled from `params`. */
export function t(msgid, params) {
  const found = messages[key(msgid)];
  return fill(typeof found === "string" ? found : msgid, params);
}

/** The plural form for `n` ("1 draw", "2 draws"; six forms in Arabic); {n} is `n` formatted. */
export function tn(singular, plural, n, params) {
  const forms = messages[key(singular)];
  const text = Array.isArray(forms)
    ? forms[plurals[pluralRules.select(n)] ?? plurals.other] ?? forms[forms.length - 1]
    : (n === 1 ? singular : plural);
  return fill(text, { n: number(n), ...params });
}
