//! Identifier, digest and code formats: `uuid`, `nanoid`, `cuid`, `cuid2`,
//! `ulid`, `xid`, `ksuid`, `hex`, the `<alg>_<enc>` hashes, `e164`,
//! `credit_card`, `iban`, `currency_code`, `lowercase`, `uppercase`.

use super::{class, HEX};

/// `8-4-4-4-12` hex digits, either case, any version and variant nibble:
/// `z.guid()`, the loosest of the zod constructors that write
/// `format: uuid` (`z.uuid()`, `z.uuidv4()`…, whose version and variant
/// rules oRPC's converter does not carry).
#[must_use]
pub fn is_uuid(value: &str) -> bool {
    let b = value.as_bytes();
    b.len() == 36
        && b[8] == b'-'
        && b[13] == b'-'
        && b[18] == b'-'
        && b[23] == b'-'
        && all_hex(&b[..8])
        && all_hex(&b[9..13])
        && all_hex(&b[14..18])
        && all_hex(&b[19..23])
        && all_hex(&b[24..])
}

/// Every byte is an ASCII hex digit (no early exit: short runs).
fn all_hex(b: &[u8]) -> bool {
    b.iter().fold(HEX, |all, &c| all & class(c)) != 0
}

/// `z.uuid()`'s own regex: an [`is_uuid`] string whose version digit
/// (the 15th character) is `1`–`8` and whose variant digit (the 20th) is
/// `8`, `9`, `a`, `b`, `A` or `B`, or the nil UUID, or the max UUID in
/// lowercase.
pub(crate) fn is_rfc_uuid(value: &str) -> bool {
    let b = value.as_bytes();
    is_uuid(value)
        && ((matches!(b[14], b'1'..=b'8')
            && matches!(b[19], b'8' | b'9' | b'a' | b'b' | b'A' | b'B'))
            || value == "00000000-0000-0000-0000-000000000000"
            || value == "ffffffff-ffff-ffff-ffff-ffffffffffff")
}

/// One or more of `A-Z a-z 0-9 _ -`: the union of `z.nanoid({ length })`
/// over every length (`z.nanoid()` is 21; the length is only in zod's
/// sibling `pattern`).
#[must_use]
pub fn is_nanoid(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

/// `c` or `C`, then six or more of `0-9 a-z` (`z.cuid()`).
#[must_use]
pub fn is_cuid(value: &str) -> bool {
    let b = value.as_bytes();
    b.len() >= 7
        && matches!(b[0], b'c' | b'C')
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
}

/// One or more of `0-9 a-z` (`z.cuid2()`).
#[must_use]
pub fn is_cuid2(value: &str) -> bool {
    !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
}

/// 26 Crockford base-32 characters (no `I L O U`, either case), the first
/// `0`–`7` (`z.ulid()`).
#[must_use]
pub fn is_ulid(value: &str) -> bool {
    let b = value.as_bytes();
    b.len() == 26
        && (b'0'..=b'7').contains(&b[0])
        && b[1..].iter().all(|c| {
            c.is_ascii_alphanumeric()
                && !matches!(c.to_ascii_uppercase(), b'I' | b'L' | b'O' | b'U')
        })
}

/// 20 of `0-9 a-v A-V` (`z.xid()`).
#[must_use]
pub fn is_xid(value: &str) -> bool {
    let b = value.as_bytes();
    b.len() == 20
        && b.iter()
            .all(|c| c.is_ascii_digit() || (b'a'..=b'v').contains(&c.to_ascii_lowercase()))
}

/// 27 ASCII letters or digits (`z.ksuid()`).
#[must_use]
pub fn is_ksuid(value: &str) -> bool {
    value.len() == 27 && value.bytes().all(|c| c.is_ascii_alphanumeric())
}

/// Zero or more hex digits, either case (`z.hex()`).
#[must_use]
pub fn is_hex(value: &str) -> bool {
    value.bytes().all(|c| c.is_ascii_hexdigit())
}

/// Exactly `len` hex digits.
fn hex_of(value: &str, len: usize) -> bool {
    value.len() == len && is_hex(value)
}

/// `body` base-64 characters (`A-Z a-z 0-9 + /`) followed by `padding`.
fn base64_of(value: &str, body: usize, padding: &str) -> bool {
    value.len() == body + padding.len()
        && value.ends_with(padding)
        && value.as_bytes()[..body]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'+' || *c == b'/')
}

/// Exactly `len` base64url characters (`A-Z a-z 0-9 _ -`), no padding.
fn base64url_of(value: &str, len: usize) -> bool {
    value.len() == len
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
}

macro_rules! hashes {
    ($($alg:literal, $bytes:literal: $hex:ident, $b64:ident, $b64url:ident, $body:literal, $pad:literal;)*) => {$(
        #[doc = concat!("A ", $alg, " digest (", $bytes, " bytes) as ", stringify!($hex), "'s hex digits, either case (`z.hash(\"", $alg, "\")`).")]
        #[must_use]
        pub fn $hex(value: &str) -> bool {
            hex_of(value, 2 * $bytes)
        }
        #[doc = concat!("A ", $alg, " digest in padded base64: ", $body, " characters then `", $pad, "` (`z.hash(\"", $alg, "\", { enc: \"base64\" })`).")]
        #[must_use]
        pub fn $b64(value: &str) -> bool {
            base64_of(value, $body, $pad)
        }
        #[doc = concat!("A ", $alg, " digest in unpadded base64url: ", $body, " characters (`z.hash(\"", $alg, "\", { enc: \"base64url\" })`).")]
        #[must_use]
        pub fn $b64url(value: &str) -> bool {
            base64url_of(value, $body)
        }
    )*};
}

hashes! {
    "md5", 16: is_md5_hex, is_md5_base64, is_md5_base64url, 22, "==";
    "sha1", 20: is_sha1_hex, is_sha1_base64, is_sha1_base64url, 27, "=";
    "sha256", 32: is_sha256_hex, is_sha256_base64, is_sha256_base64url, 43, "=";
    "sha384", 48: is_sha384_hex, is_sha384_base64, is_sha384_base64url, 64, "";
    "sha512", 64: is_sha512_hex, is_sha512_base64, is_sha512_base64url, 86, "==";
}

/// `+`, a digit 1–9, then 6–14 more digits: 7–15 digits in all, no
/// separators (`z.e164()`).
#[must_use]
pub fn is_e164(value: &str) -> bool {
    let Some(digits) = value.strip_prefix('+') else {
        return false;
    };
    let b = digits.as_bytes();
    (7..=15).contains(&b.len()) && b[0] != b'0' && b.iter().all(u8::is_ascii_digit)
}

/// 12–19 digits, optionally separated by single spaces or hyphens, passing
/// the Luhn checksum (`z.creditCard()`).
#[must_use]
pub fn is_credit_card(value: &str) -> bool {
    let b = value.as_bytes();
    if !b.first().is_some_and(u8::is_ascii_digit) || !b.last().is_some_and(u8::is_ascii_digit) {
        return false;
    }
    let mut count = 0;
    let mut previous_separator = false;
    for &c in b {
        match c {
            b'0'..=b'9' => {
                count += 1;
                previous_separator = false;
            }
            b' ' | b'-' if !previous_separator => previous_separator = true,
            _ => return false,
        }
    }
    if !(12..=19).contains(&count) {
        return false;
    }
    let mut sum = 0;
    for (i, c) in b.iter().rev().filter(|c| c.is_ascii_digit()).enumerate() {
        let d = u32::from(c - b'0');
        sum += if i % 2 == 1 {
            [0, 2, 4, 6, 8, 1, 3, 5, 7, 9][d as usize]
        } else {
            d
        };
    }
    sum % 10 == 0
}

/// An IBAN in electronic form: two uppercase letters, check digits other
/// than `00`, `01`, `99`, 11–30 uppercase letters or digits, and an
/// ISO 7064 mod-97 remainder of 1 (`z.iban()`).
#[must_use]
pub fn is_iban(value: &str) -> bool {
    let b = value.as_bytes();
    if !(15..=34).contains(&b.len())
        || !b[..2].iter().all(u8::is_ascii_uppercase)
        || !b[2..4].iter().all(u8::is_ascii_digit)
        || matches!(&b[2..4], b"00" | b"01" | b"99")
        || !b[4..]
            .iter()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        return false;
    }
    let remainder = b[4..].iter().chain(&b[..4]).fold(0u32, |r, &c| {
        if c.is_ascii_uppercase() {
            (r * 100 + u32::from(c - b'A') + 10) % 97
        } else {
            (r * 10 + u32::from(c - b'0')) % 97
        }
    });
    remainder == 1
}

/// The ISO 4217 alphabetic codes zod 4.6.7's `z.currencyCode()` lists.
const CURRENCY_CODES: &str = "AED AFN ALL AMD AOA ARS AUD AWG AZN BAM BBD BDT BHD BIF BMD BND BOB BOV BRL BSD BTN BWP BYN BZD CAD CDF CHE CHF CHW CLF CLP CNY COP COU CRC CUP CVE CZK DJF DKK DOP DZD EGP ERN ETB EUR FJD FKP GBP GEL GHS GIP GMD GNF GTQ GYD HKD HNL HTG HUF IDR ILS INR IQD IRR ISK JMD JOD JPY KES KGS KHR KMF KPW KRW KWD KYD KZT LAK LBP LKR LRD LSL LYD MAD MDL MGA MKD MMK MNT MOP MRU MUR MVR MWK MXN MXV MYR MZN NAD NGN NIO NOK NPR NZD OMR PAB PEN PGK PHP PKR PLN PYG QAR RON RSD RUB RWF SAR SBD SCR SDG SEK SGD SHP SLE SOS SRD SSP STN SVC SYP SZL THB TJS TMT TND TOP TRY TTD TWD TZS UAH UGX USD USN UYI UYU UYW UZS VED VES VND VUV WST XAD XAF XAG XAU XBA XBB XBC XBD XCD XCG XDR XOF XPD XPF XPT XSU XTS XUA XXX YER ZAR ZMW ZWG";

/// One of the ISO 4217 alphabetic codes of `z.currencyCode()` (uppercase).
#[must_use]
pub fn is_currency_code(value: &str) -> bool {
    value.len() == 3
        && value.bytes().all(|c| c.is_ascii_uppercase())
        && CURRENCY_CODES.split(' ').any(|c| c == value)
}

/// No ASCII uppercase letter (`z.string().lowercase()`; other scripts are
/// not checked).
#[must_use]
pub fn is_lowercase(value: &str) -> bool {
    !value.bytes().any(|c| c.is_ascii_uppercase())
}

/// No ASCII lowercase letter (`z.string().uppercase()`).
#[must_use]
pub fn is_uppercase(value: &str) -> bool {
    !value.bytes().any(|c| c.is_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuid_accepts_any_version_and_variant_nibble() {
        assert!(is_uuid("123e4567-e89b-02d3-0456-426614174000"));
        assert!(is_uuid("FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF"));
        assert!(!is_uuid("123e4567e89b12d3a456426614174000"));
        assert!(!is_uuid("123e4567-e89b-12d3-a456-42661417400g"));
    }

    #[test]
    fn credit_card_checks_luhn_and_single_separators() {
        assert!(is_credit_card("4111 1111-1111 1111"));
        assert!(!is_credit_card("4111111111111112"));
        assert!(!is_credit_card("4111  1111 1111 1111"));
    }

    #[test]
    fn iban_checks_the_mod_97_remainder() {
        assert!(is_iban("GB82WEST12345698765432"));
        assert!(!is_iban("GB82WEST12345698765431"));
        assert!(!is_iban("GB00WEST12345698765432"));
    }

    #[test]
    fn currency_code_list_is_complete_and_sorted() {
        let codes: Vec<&str> = CURRENCY_CODES.split(' ').collect();
        assert_eq!(codes.len(), 178);
        assert!(codes.windows(2).all(|w| w[0] < w[1]));
        assert!(is_currency_code("ZWG"));
        assert!(!is_currency_code("ZWL"));
    }
}
