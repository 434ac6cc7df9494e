//! The hand-written `format` checks equal zod's own regexes (the exact
//! `pattern`s zod's converter writes, read from
//! `tests/fixtures/formats/zod-formats.json` and run through
//! `surface_runtime::pattern`'s regex engine, `Pattern::engine_only`) on many strings near the committed cases:
//! every case of a format is mutated by 1–3 random edits (insert, delete or
//! replace a character drawn from that format's own alphabet and a few
//! troublemakers) with a fixed seed. Offline; the Node differential test
//! (`tests/formats_zod.rs` in the facade) checks the cases themselves and
//! the regexes against the real zod and `RegExp`.

use serde_json::Value;
use surface_runtime::format;
use surface_runtime::pattern::Pattern;

const SCHEMAS: &str = include_str!("../../tests/fixtures/formats/zod-formats.json");
const CASES: &str = include_str!("../../tests/fixtures/formats/cases.json");

/// Formats whose zod check is exactly the union of these constructors'
/// emitted patterns (zod's converter writes the regex it runs). Left out:
/// `ipv6`/`cidrv6` (zod checks with the URL parser, not its pattern),
/// `mac`/`nanoid` (unions over unbounded parameters), `uri`, `jwt`,
/// `credit_card`, `iban` (checks beyond any pattern), `emoji` (is the
/// pattern).
const EXACT: &[(&str, &[&str])] = &[
    ("uuid", &["z.guid()"]),
    ("email", &["z.email()"]),
    (
        "date-time",
        &[
            "z.iso.datetime({ offset: true, local: true })",
            "z.iso.datetime({ precision: -1, offset: true, local: true })",
        ],
    ),
    ("date", &["z.iso.date()"]),
    ("time", &["z.iso.time()"]),
    ("duration", &["z.iso.duration()"]),
    ("ipv4", &["z.ipv4()"]),
    ("cidrv4", &["z.cidrv4()"]),
    ("hostname", &["z.hostname()"]),
    ("base64", &["z.base64()"]),
    ("base64url", &["z.base64url()"]),
    ("e164", &["z.e164()"]),
    ("cuid", &["z.cuid()"]),
    ("cuid2", &["z.cuid2()"]),
    ("ulid", &["z.ulid()"]),
    ("xid", &["z.xid()"]),
    ("ksuid", &["z.ksuid()"]),
    ("hex", &["z.hex()"]),
    ("currency_code", &["z.currencyCode()"]),
    ("lowercase", &["z.string().lowercase()"]),
    ("uppercase", &["z.string().uppercase()"]),
    ("md5_hex", &["z.hash(\"md5\")"]),
    ("md5_base64", &["z.hash(\"md5\", { enc: \"base64\" })"]),
    (
        "md5_base64url",
        &["z.hash(\"md5\", { enc: \"base64url\" })"],
    ),
    ("sha1_hex", &["z.hash(\"sha1\")"]),
    ("sha1_base64", &["z.hash(\"sha1\", { enc: \"base64\" })"]),
    ("sha256_hex", &["z.hash(\"sha256\")"]),
    (
        "sha256_base64url",
        &["z.hash(\"sha256\", { enc: \"base64url\" })"],
    ),
    (
        "sha384_base64",
        &["z.hash(\"sha384\", { enc: \"base64\" })"],
    ),
    (
        "sha512_base64",
        &["z.hash(\"sha512\", { enc: \"base64\" })"],
    ),
];

const MUTANTS_PER_CASE: usize = 300;

/// splitmix64: a fixed, dependency-free sequence.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn mutate(seed: &str, alphabet: &[char], rng: &mut Rng) -> String {
    let mut chars: Vec<char> = seed.chars().collect();
    for _ in 0..=rng.below(3) {
        let c = alphabet[rng.below(alphabet.len())];
        match rng.below(3) {
            0 => chars.insert(rng.below(chars.len() + 1), c),
            1 if !chars.is_empty() => {
                chars.remove(rng.below(chars.len()));
            }
            _ if !chars.is_empty() => {
                let i = rng.below(chars.len());
                chars[i] = c;
            }
            _ => chars.push(c),
        }
    }
    chars.into_iter().collect()
}

#[test]
fn handwritten_checks_equal_zods_regexes_on_mutated_cases() {
    let schemas: Value = serde_json::from_str(SCHEMAS).unwrap();
    let cases: Value = serde_json::from_str(CASES).unwrap();
    let mut rng = Rng(0x5eed_f0f0);
    let mut disagreements = Vec::new();
    let mut tried = 0usize;
    for (name, constructors) in EXACT {
        let patterns: Vec<Pattern> = constructors
            .iter()
            .map(|c| {
                let source = schemas[*c]["zod"]["pattern"]
                    .as_str()
                    .unwrap_or_else(|| panic!("{c} has a zod pattern"));
                Pattern::engine_only(Box::leak(source.to_string().into_boxed_str()))
            })
            .collect();
        let originals: Vec<&str> = ["valid", "invalid"]
            .iter()
            .flat_map(|k| cases[*name][*k].as_array().unwrap())
            .map(|v| v.as_str().unwrap())
            .collect();
        let mut alphabet: Vec<char> = originals.iter().flat_map(|s| s.chars()).collect();
        alphabet.extend([' ', '\n', '\u{e9}', '\u{661}', '0', '9', '-', '.', ':']);
        alphabet.sort_unstable();
        alphabet.dedup();
        for original in &originals {
            for _ in 0..MUTANTS_PER_CASE {
                let value = mutate(original, &alphabet, &mut rng);
                let zod = patterns
                    .iter()
                    .any(|p| p.matches(&value).expect("compiles"));
                tried += 1;
                if format::check(name, &value) != Some(zod) {
                    disagreements.push(format!("{name} {value:?}: zod regex {zod}"));
                }
            }
        }
    }
    assert!(tried > 100_000, "{tried} mutants");
    assert!(
        disagreements.is_empty(),
        "{} of {tried} mutants disagree:\n{}",
        disagreements.len(),
        disagreements[..disagreements.len().min(40)].join("\n")
    );
}
