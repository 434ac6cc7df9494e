// The zod 4 string-format constructors whose JSON Schema output the Rust
// `surface_runtime::format` module must understand, and the acceptance rule
// each asserted `format` follows (docs/formats.md, "Which zod constructor a
// format stands for").
//
// A constructor's key is the JavaScript expression that builds it; it is
// evaluated as written, so the fixture's names are the code.

import { z } from 'zod';

const build = (expression) => new Function('z', `return ${expression};`)(z);

/** zod expressions, in fixture order. */
export const CONSTRUCTOR_EXPRESSIONS = [
  'z.guid()',
  'z.uuid()',
  'z.uuidv4()',
  'z.uuidv6()',
  'z.uuidv7()',
  'z.uuid({ version: "v1" })',
  'z.uuid({ version: "v2" })',
  'z.uuid({ version: "v3" })',
  'z.uuid({ version: "v5" })',
  'z.uuid({ version: "v8" })',
  'z.email()',
  'z.email({ pattern: z.regexes.html5Email })',
  'z.url()',
  'z.httpUrl()',
  'z.url({ protocol: /^https$/ })',
  'z.url({ normalize: true })',
  'z.iso.datetime()',
  'z.iso.datetime({ offset: true })',
  'z.iso.datetime({ local: true })',
  'z.iso.datetime({ offset: true, local: true })',
  'z.iso.datetime({ precision: -1 })',
  'z.iso.datetime({ precision: -1, offset: true })',
  'z.iso.datetime({ precision: -1, local: true })',
  'z.iso.datetime({ precision: -1, offset: true, local: true })',
  'z.iso.datetime({ precision: 0 })',
  'z.iso.datetime({ precision: 3 })',
  'z.iso.datetime({ precision: 3, offset: true })',
  'z.iso.date()',
  'z.iso.time()',
  'z.iso.time({ precision: -1 })',
  'z.iso.time({ precision: 0 })',
  'z.iso.time({ precision: 3 })',
  'z.iso.duration()',
  'z.date()',
  'z.coerce.date()',
  'z.ipv4()',
  'z.ipv6()',
  'z.cidrv4()',
  'z.cidrv6()',
  'z.mac()',
  'z.mac({ delimiter: "-" })',
  'z.mac({ delimiter: "." })',
  'z.base64()',
  'z.base64url()',
  'z.e164()',
  'z.nanoid()',
  'z.nanoid({ length: 10 })',
  'z.cuid()',
  'z.cuid2()',
  'z.ulid()',
  'z.xid()',
  'z.ksuid()',
  'z.emoji()',
  'z.jwt()',
  'z.jwt({ alg: "HS256" })',
  'z.hostname()',
  'z.hex()',
  'z.creditCard()',
  'z.iban()',
  'z.currencyCode()',
  ...['md5', 'sha1', 'sha256', 'sha384', 'sha512'].flatMap((alg) => [
    `z.hash("${alg}")`,
    `z.hash("${alg}", { enc: "base64" })`,
    `z.hash("${alg}", { enc: "base64url" })`,
  ]),
  'z.string().lowercase()',
  'z.string().uppercase()',
  'z.string().startsWith("ab")',
  'z.string().endsWith("yz")',
  'z.string().includes("mid")',
  'z.string().regex(/^[a-z]+$/)',
  'z.stringFormat("even-length", (v) => v.length % 2 === 0)',
];

/** `[[expression, zodSchema]]` in fixture order. */
export const constructors = CONSTRUCTOR_EXPRESSIONS.map((e) => [e, build(e)]);
const byName = new Map(constructors);

const accepts = (name) => {
  const schema = byName.get(name);
  if (!schema) throw new Error(`unknown constructor ${name}`);
  return (v) => schema.safeParse(v).success;
};
const anyOf = (...names) => {
  const fns = names.map(accepts);
  return (v) => fns.some((f) => f(v));
};
const names = (prefix) => CONSTRUCTOR_EXPRESSIONS.filter((n) => n.startsWith(prefix));

/**
 * The reference acceptance of every asserted `format` name: a function
 * `value => boolean` built from the real zod constructors. A format stands
 * for the union of the zod constructors that write it, over every option
 * the converters erase (the only exception is `email`, whose `pattern`
 * option can widen it to anything: it is `z.email()`'s own check).
 * Parameters with an unbounded domain are resolved from the value itself:
 * the only `nanoid` length a value can match is its own length, the only
 * `mac` delimiter is the one at its fixed position.
 */
export const formatReferences = {
  uuid: anyOf(...names('z.guid('), ...names('z.uuid')),
  email: accepts('z.email()'),
  uri: anyOf(...names('z.url('), 'z.httpUrl()'),
  'date-time': anyOf(...names('z.iso.datetime(')),
  date: accepts('z.iso.date()'),
  time: anyOf(...names('z.iso.time(')),
  duration: accepts('z.iso.duration()'),
  ipv4: accepts('z.ipv4()'),
  ipv6: accepts('z.ipv6()'),
  cidrv4: accepts('z.cidrv4()'),
  cidrv6: accepts('z.cidrv6()'),
  mac: (v) => {
    const extra = v.length - 12;
    if (extra < 0 || extra % 5 !== 0) return false;
    const delimiter = v.slice(2, 2 + extra / 5);
    return z.mac({ delimiter }).safeParse(v).success;
  },
  base64: accepts('z.base64()'),
  base64url: accepts('z.base64url()'),
  e164: accepts('z.e164()'),
  nanoid: (v) => v.length >= 1 && z.nanoid({ length: v.length }).safeParse(v).success,
  cuid: accepts('z.cuid()'),
  cuid2: accepts('z.cuid2()'),
  ulid: accepts('z.ulid()'),
  xid: accepts('z.xid()'),
  ksuid: accepts('z.ksuid()'),
  emoji: accepts('z.emoji()'),
  jwt: anyOf(...names('z.jwt(')),
  hostname: accepts('z.hostname()'),
  hex: accepts('z.hex()'),
  credit_card: accepts('z.creditCard()'),
  iban: accepts('z.iban()'),
  currency_code: accepts('z.currencyCode()'),
  lowercase: accepts('z.string().lowercase()'),
  uppercase: accepts('z.string().uppercase()'),
  ...Object.fromEntries(
    ['md5', 'sha1', 'sha256', 'sha384', 'sha512'].flatMap((alg) =>
      ['hex', 'base64', 'base64url'].map((enc) => [
        `${alg}_${enc}`,
        accepts(enc === 'hex' ? `z.hash("${alg}")` : `z.hash("${alg}", { enc: "${enc}" })`),
      ]),
    ),
  ),
};
