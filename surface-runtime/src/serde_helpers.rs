//! Serde helpers named by the types that `manifest!` generates from JSON
//! Schema (generated types round-trip the schema's JSON). Not
//! public API: generated code reaches them as
//! `<crate>::__private::serde_helpers::…`.
//!
//! zod keeps *optional* (the property may be absent) and *nullable* (the
//! value may be `null`) apart, while serde's derive treats a missing
//! `Option` field as `None` and `null` as `None`. The field helpers below
//! restore the distinction:
//!
//! | property                | Rust field          | helper                |
//! |-------------------------|---------------------|-----------------------|
//! | required, nullable      | `Option<T>`         | [`required_nullable`] |
//! | optional, not nullable  | `Option<T>`         | [`optional`]          |
//! | optional, nullable      | `Option<Option<T>>` | [`optional`]          |
//!
//! Generated structs do not name these through `deserialize_with`: their
//! hand-written `Deserialize` calls [`deserialize_struct`], whose
//! [`StructFields`] methods read the properties with the same rules
//! ([`StructFields::required`], [`StructFields::present`] and the slots
//! filled by [`value`] and [`integer_value`]); newtypes and union variants
//! still use [`integer`].
//!
//! The const helpers ([`serialize_const`], [`deserialize_const`]) back the
//! unit structs generated for number, boolean and `null` `const` schemas;
//! [`TupleWithRest`] represents a `prefixItems` tuple whose further items
//! are allowed (`items` absent or a schema).
//!
//! Integers: JSON Schema's `integer` is any number with a zero fractional
//! part, so `2.0` is one. serde reads `2.0` into `i64` only through
//! [`integer`] and [`optional_integer`] (and [`Integers`], which they use):
//! generated code names them on every field, newtype and union variant
//! whose type is an integer, or `Option`s, `Vec`s, `Box`es and maps of
//! integers. `2.0` becomes `2` and is written back as `2`, as JavaScript
//! (and so an oRPC server) writes it. `2.5`, and integral values out of the
//! type's range, are refused.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Unexpected, Visitor};
use serde::ser::SerializeSeq;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `deserialize_with` helper for a *required* nullable property
/// (`Option<T>`). Because the field names a `deserialize_with` function,
/// serde reports a missing property as `missing field` instead of silently
/// producing `None`; a present `null` becomes `None`.
///
/// # Errors
/// Whatever `Option<T>` reports for the value (wrong type).
pub fn required_nullable<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer)
}

/// `deserialize_with` helper for an *optional* property, used together with
/// `#[serde(default, skip_serializing_if = "Option::is_none")]`: an absent
/// property is `None` (via `default`), a present value is `Some(value)`.
///
/// For an optional non-nullable property (`Option<T>` where `T` rejects
/// `null`) a present `null` is therefore an error, as in zod. For an
/// optional nullable property the field is `Option<Option<T>>` and `T` here
/// is `Option<U>`: absent is `None`, `null` is `Some(None)`, a value is
/// `Some(Some(v))` — the double-option pattern.
///
/// # Errors
/// Whatever `T` reports for the value, e.g. `invalid type: null, expected a
/// string` for `null` sent to an optional string property.
pub fn optional<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

/// A type built from integers (`i64`, `u64`) through `Option`, `Vec`,
/// `Box` and `BTreeMap<String, _>`, read with JSON Schema's notion of an
/// integer: a JSON number with a zero fractional part, so `2`, `2.0` and
/// `2e0` all read as `2`.
pub trait Integers: Sized {
    /// Reads `Self`, accepting integral floating-point numbers where an
    /// integer is expected.
    ///
    /// # Errors
    /// A number with a fractional part (`invalid type: floating point
    /// `2.5`, expected an integer`), an integer out of the type's range,
    /// or a value of another type.
    fn deserialize_integers<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>;
}

/// `deserialize_with` helper for a required field (or a newtype or union
/// variant) whose type is [`Integers`]: `2.0` reads as `2`. Naming a
/// `deserialize_with` function keeps a missing required property an error.
///
/// # Errors
/// As [`Integers::deserialize_integers`].
pub fn integer<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Integers,
{
    T::deserialize_integers(deserializer)
}

/// [`optional`] for a property whose type is [`Integers`].
///
/// # Errors
/// As [`Integers::deserialize_integers`].
pub fn optional_integer<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Integers,
{
    T::deserialize_integers(deserializer).map(Some)
}

/// Reads one integer of type `T` (`i64` or `u64`) from any JSON number
/// with a zero fractional part.
struct IntegerVisitor<T>(PhantomData<T>);

impl<T> IntegerVisitor<T> {
    fn float<E: serde::de::Error>(x: f64, fits: impl FnOnce(f64) -> Option<T>) -> Result<T, E> {
        if x.fract() != 0.0 || !x.is_finite() {
            return Err(E::invalid_type(Unexpected::Float(x), &"an integer"));
        }
        fits(x).ok_or_else(|| E::invalid_value(Unexpected::Float(x), &"an integer in range"))
    }
}

impl Visitor<'_> for IntegerVisitor<i64> {
    type Value = i64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an integer")
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<i64, E> {
        Ok(v)
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<i64, E> {
        i64::try_from(v).map_err(|_| E::invalid_value(Unexpected::Unsigned(v), &"an i64"))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<i64, E> {
        // -2^63 ≤ v < 2^63: exactly the f64 values that convert without
        // saturating.
        Self::float(v, |x| {
            (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0)
                .contains(&x)
                .then_some(x as i64)
        })
    }
}

impl Visitor<'_> for IntegerVisitor<u64> {
    type Value = u64;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a non-negative integer")
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<u64, E> {
        u64::try_from(v).map_err(|_| E::invalid_value(Unexpected::Signed(v), &"a u64"))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<u64, E> {
        Ok(v)
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<u64, E> {
        Self::float(v, |x| {
            (0.0..18_446_744_073_709_551_616.0)
                .contains(&x)
                .then_some(x as u64)
        })
    }
}

impl Integers for i64 {
    fn deserialize_integers<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // `deserialize_any`, not `deserialize_i64`: serde's buffered
        // content (internally tagged and untagged enums) refuses a float
        // for `deserialize_i64` without asking the visitor.
        deserializer.deserialize_any(IntegerVisitor::<i64>(PhantomData))
    }
}

impl Integers for u64 {
    fn deserialize_integers<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // `deserialize_any`, not `deserialize_u64`: serde's buffered
        // content (internally tagged and untagged enums) refuses a float
        // for `deserialize_u64` without asking the visitor.
        deserializer.deserialize_any(IntegerVisitor::<u64>(PhantomData))
    }
}

/// [`Integers::deserialize_integers`] as a seed, for elements and values.
struct IntegersSeed<T>(PhantomData<T>);

impl<'de, T: Integers> DeserializeSeed<'de> for IntegersSeed<T> {
    type Value = T;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        T::deserialize_integers(deserializer)
    }
}

impl<T: Integers> Integers for Box<T> {
    fn deserialize_integers<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize_integers(deserializer).map(Box::new)
    }
}

impl<T: Integers> Integers for Option<T> {
    fn deserialize_integers<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct OptionVisitor<T>(PhantomData<T>);
        impl<'de, T: Integers> Visitor<'de> for OptionVisitor<T> {
            type Value = Option<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or null")
            }
            fn visit_none<E: serde::de::Error>(self) -> Result<Option<T>, E> {
                Ok(None)
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<Option<T>, E> {
                Ok(None)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<T>, D::Error> {
                T::deserialize_integers(d).map(Some)
            }
        }
        deserializer.deserialize_option(OptionVisitor(PhantomData))
    }
}

impl<T: Integers> Integers for Vec<T> {
    fn deserialize_integers<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct VecVisitor<T>(PhantomData<T>);
        impl<'de, T: Integers> Visitor<'de> for VecVisitor<T> {
            type Value = Vec<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
                // The hint is the other party's; cap what it preallocates.
                let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
                while let Some(v) = seq.next_element_seed(IntegersSeed::<T>(PhantomData))? {
                    out.push(v);
                }
                Ok(out)
            }
        }
        deserializer.deserialize_seq(VecVisitor(PhantomData))
    }
}

impl<T: Integers> Integers for BTreeMap<String, T> {
    fn deserialize_integers<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct MapVisitor<T>(PhantomData<T>);
        impl<'de, T: Integers> Visitor<'de> for MapVisitor<T> {
            type Value = BTreeMap<String, T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut out = BTreeMap::new();
                while let Some((k, v)) =
                    map.next_entry_seed(PhantomData::<String>, IntegersSeed::<T>(PhantomData))?
                {
                    out.insert(k, v);
                }
                Ok(out)
            }
        }
        deserializer.deserialize_map(MapVisitor(PhantomData))
    }
}

/// The value of a `const` schema that is not a string (strings become
/// single-variant enums instead).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ConstValue {
    /// `null`.
    Null,
    /// `true` or `false`.
    Bool(bool),
    /// An integer that fits `i64`.
    I64(i64),
    /// A non-negative integer above `i64::MAX`.
    U64(u64),
    /// Any other number.
    F64(f64),
}

impl ConstValue {
    /// Whether `value` is this constant. Numbers compare by value as JSON
    /// Schema does (`1` equals `1.0`).
    pub fn matches(&self, value: &serde_json::Value) -> bool {
        use serde_json::Value;
        match (self, value) {
            (ConstValue::Null, Value::Null) => true,
            (ConstValue::Bool(b), Value::Bool(v)) => b == v,
            (ConstValue::I64(n), Value::Number(v)) => {
                v.as_i64() == Some(*n) || (v.is_f64() && v.as_f64() == Some(*n as f64))
            }
            (ConstValue::U64(n), Value::Number(v)) => {
                v.as_u64() == Some(*n) || (v.is_f64() && v.as_f64() == Some(*n as f64))
            }
            (ConstValue::F64(x), Value::Number(v)) => v.as_f64() == Some(*x),
            _ => false,
        }
    }

    fn to_json(self) -> serde_json::Value {
        match self {
            ConstValue::Null => serde_json::Value::Null,
            ConstValue::Bool(b) => b.into(),
            ConstValue::I64(n) => n.into(),
            ConstValue::U64(n) => n.into(),
            ConstValue::F64(x) => serde_json::Number::from_f64(x)
                .map(serde_json::Value::Number)
                .unwrap_or(serde_json::Value::Null),
        }
    }
}

/// Writes the constant `value`.
///
/// # Errors
/// Only what the serializer reports.
pub fn serialize_const<S: Serializer>(
    value: &ConstValue,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match *value {
        ConstValue::Null => serializer.serialize_unit(),
        ConstValue::Bool(b) => serializer.serialize_bool(b),
        ConstValue::I64(n) => serializer.serialize_i64(n),
        ConstValue::U64(n) => serializer.serialize_u64(n),
        ConstValue::F64(x) => serializer.serialize_f64(x),
    }
}

/// Reads one value and accepts it only when it equals `expected`.
///
/// # Errors
/// `expected the constant <expected>, found <value>` for any other value.
pub fn deserialize_const<'de, D: Deserializer<'de>>(
    deserializer: D,
    expected: &ConstValue,
) -> Result<(), D::Error> {
    let found = serde_json::Value::deserialize(deserializer)?;
    if expected.matches(&found) {
        Ok(())
    } else {
        Err(D::Error::custom(format_args!(
            "expected the constant {}, found {}",
            expected.to_json(),
            found
        )))
    }
}

/// A JSON array whose first elements have fixed types (`prefixItems`) and
/// whose further elements all have one type (`items`): `["head", 1, 2]`
/// for `prefixItems: [string]`, `items: integer` is
/// `TupleWithRest { prefix: ("head".into(),), rest: vec![1, 2] }`.
/// Every prefix element is required (zod tuples require them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TupleWithRest<P, R> {
    /// The `prefixItems` elements, as a Rust tuple.
    pub prefix: P,
    /// The further elements.
    pub rest: Vec<R>,
}

/// Used as the tuple it starts with: `t.0`, `t.1` read (and, through
/// [`DerefMut`](std::ops::DerefMut), write) the prefix elements, so code
/// written against a closed tuple `(A, B)` (zod's `items: false`) reads the
/// same against the `TupleWithRest<(A, B), R>` a converter that omits
/// `items` gives.
impl<P, R> std::ops::Deref for TupleWithRest<P, R> {
    type Target = P;
    fn deref(&self) -> &P {
        &self.prefix
    }
}

impl<P, R> std::ops::DerefMut for TupleWithRest<P, R> {
    fn deref_mut(&mut self) -> &mut P {
        &mut self.prefix
    }
}

/// The prefix alone, no further elements: `TupleWithRest::from((1.5, 2))`.
impl<P, R> From<P> for TupleWithRest<P, R> {
    fn from(prefix: P) -> Self {
        TupleWithRest {
            prefix,
            rest: Vec::new(),
        }
    }
}

/// Reads the elements of a tuple prefix from a sequence.
pub trait TuplePrefixDe<'de>: Sized {
    /// Reads the prefix, failing with `invalid length` when the sequence is
    /// shorter.
    ///
    /// # Errors
    /// A short sequence or an element of the wrong type.
    fn from_seq<A: SeqAccess<'de>>(seq: &mut A) -> Result<Self, A::Error>;
}

/// Writes the elements of a tuple prefix into a sequence.
pub trait TuplePrefixSer {
    /// Number of elements.
    const LEN: usize;
    /// Writes the elements in order.
    ///
    /// # Errors
    /// Only what the serializer reports.
    fn serialize_into<S: SerializeSeq>(&self, seq: &mut S) -> Result<(), S::Error>;
}

macro_rules! tuple_prefix {
    ($($len:literal => ($($name:ident $idx:tt),+);)*) => {$(
        impl<'de, $($name: Deserialize<'de>),+> TuplePrefixDe<'de> for ($($name,)+) {
            fn from_seq<Sq: SeqAccess<'de>>(seq: &mut Sq) -> Result<Self, Sq::Error> {
                Ok(($(
                    match seq.next_element::<$name>()? {
                        Some(value) => value,
                        None => {
                            return Err(Sq::Error::invalid_length(
                                $idx,
                                &concat!("an array of at least ", $len, " elements"),
                            ))
                        }
                    },
                )+))
            }
        }
        impl<$($name: Serialize),+> TuplePrefixSer for ($($name,)+) {
            const LEN: usize = $len;
            fn serialize_into<S: SerializeSeq>(&self, seq: &mut S) -> Result<(), S::Error> {
                $(seq.serialize_element(&self.$idx)?;)+
                Ok(())
            }
        }
    )*};
}

tuple_prefix! {
    1 => (A 0);
    2 => (A 0, B 1);
    3 => (A 0, B 1, C 2);
    4 => (A 0, B 1, C 2, D 3);
    5 => (A 0, B 1, C 2, D 3, E 4);
    6 => (A 0, B 1, C 2, D 3, E 4, F 5);
    7 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6);
    8 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);
    9 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8);
    10 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9);
    11 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10);
    12 => (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11);
}

impl<P: TuplePrefixSer, R: Serialize> Serialize for TupleWithRest<P, R> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(P::LEN + self.rest.len()))?;
        self.prefix.serialize_into(&mut seq)?;
        for element in &self.rest {
            seq.serialize_element(element)?;
        }
        seq.end()
    }
}

impl<'de, P: TuplePrefixDe<'de>, R: Deserialize<'de>> Deserialize<'de> for TupleWithRest<P, R> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct SeqVisitor<P, R>(PhantomData<(P, R)>);
        impl<'de, P: TuplePrefixDe<'de>, R: Deserialize<'de>> Visitor<'de> for SeqVisitor<P, R> {
            type Value = TupleWithRest<P, R>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an array (a tuple with further items)")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let prefix = P::from_seq(&mut seq)?;
                let mut rest = Vec::new();
                while let Some(element) = seq.next_element()? {
                    rest.push(element);
                }
                Ok(TupleWithRest { prefix, rest })
            }
        }
        deserializer.deserialize_seq(SeqVisitor(PhantomData))
    }
}

/// What a generated struct does with properties it has no field for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnknownProperties {
    /// Skipped (serde's default).
    Ignore,
    /// An error, `unknown field` (`additionalProperties: false`).
    Deny,
    /// Kept, in input order, for [`StructFields::extras`] (the flattened
    /// `additional_properties` map).
    Keep,
}

/// The shape of a generated struct, for [`deserialize_struct`].
#[derive(Debug)]
pub struct StructShape {
    /// The struct's name, for `expected struct …` messages.
    pub name: &'static str,
    /// The JSON names of its properties, in field order; field `n` of the
    /// struct reads property `fields[n]`.
    pub fields: &'static [&'static str],
    /// What happens to other properties.
    pub unknown: UnknownProperties,
}

/// What [`deserialize_struct`] keeps besides the generated struct's slots:
/// its shape and the properties it has no field for. The generated
/// `finish` function takes the slots' values through it.
#[derive(Debug)]
pub struct StructFields {
    fields: &'static [&'static str],
    extras: Vec<(String, serde_json::Value)>,
}

/// The error a generated struct's reader returns; converted to the
/// deserializer's error with `serde::de::Error::custom` (inside the
/// deserializer, so serde_json adds the position of the offending value).
pub type StructError = serde_json::Error;

/// `serde_json::Value`, as the generated readers name it.
pub type Json = serde_json::Value;

/// A missing property, read the way serde's derive reads one: an `Option`
/// becomes `None`, any other type fails with `missing field`.
struct MissingField(&'static str);

impl<'de> Deserializer<'de> for MissingField {
    type Error = StructError;
    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, StructError> {
        Err(StructError::missing_field(self.0))
    }
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, StructError> {
        visitor.visit_none()
    }
    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

/// A property's value read as `T` (the generated `put` function's
/// conversion for every field that is not [`Integers`]).
///
/// # Errors
/// What `T` reports for the value.
pub fn value<T: serde::de::DeserializeOwned>(value: serde_json::Value) -> Result<T, StructError> {
    T::deserialize(value)
}

/// A property's value read as [`Integers`] (`2.0` is `2`).
///
/// # Errors
/// What [`Integers::deserialize_integers`] reports.
pub fn integer_value<T: Integers>(value: serde_json::Value) -> Result<T, StructError> {
    T::deserialize_integers(value)
}

impl StructFields {
    fn name(&self, index: usize) -> &'static str {
        self.fields.get(index).copied().unwrap_or("")
    }

    /// A required property without a `deserialize_with` helper: absent is
    /// `missing field`, or `None` when `T` is an `Option` (as serde's
    /// derive reads a missing field).
    ///
    /// # Errors
    /// `missing field`.
    pub fn required<T: serde::de::DeserializeOwned>(
        &self,
        index: usize,
        slot: Option<T>,
    ) -> Result<T, StructError> {
        match slot {
            Some(value) => Ok(value),
            None => T::deserialize(MissingField(self.name(index))),
        }
    }

    /// A required property read by a helper ([`required_nullable`],
    /// [`integer`]): absent is `missing field`.
    ///
    /// # Errors
    /// `missing field`.
    pub fn present<T>(&self, index: usize, slot: Option<T>) -> Result<T, StructError> {
        slot.ok_or_else(|| StructError::missing_field(self.name(index)))
    }

    /// The properties the struct has no field for
    /// ([`UnknownProperties::Keep`]), each read as `T`, after the whole
    /// object (as serde's `flatten` reads them); a repeated key keeps its
    /// last value.
    ///
    /// # Errors
    /// What `T` reports for a value.
    pub fn extras<T: serde::de::DeserializeOwned>(
        &mut self,
    ) -> Result<BTreeMap<String, T>, StructError> {
        std::mem::take(&mut self.extras)
            .into_iter()
            .map(|(key, value)| T::deserialize(value).map(|value| (key, value)))
            .collect()
    }
}

/// `Deserialize::deserialize` of a generated struct. Reads a JSON object
/// with the properties of `shape`: each property's value is handed to
/// `put` (with its index in `shape.fields`) as soon as it is read, which
/// converts it into its slot in `slots`; a repeated property is `duplicate
/// field`, another property is skipped, `unknown field`, or kept for
/// [`StructFields::extras`], by `shape.unknown`. Then `finish` builds the
/// struct from the slots. `put` and `finish` are plain functions of the
/// generated code; this generic part is written once, in the runtime,
/// instead of the visitors serde's derive expands per struct (most of a
/// big manifest's compile time; docs/codegen.md, "Compile time at scale").
/// Messages and positions are the derive's.
///
/// # Errors
/// A value that is not an object (`invalid type: …, expected struct
/// Name`), a duplicate or denied property, and whatever `put` and
/// `finish` report.
pub fn deserialize_struct<'de, D, S, T>(
    deserializer: D,
    shape: &'static StructShape,
    slots: S,
    put: fn(&mut S, usize, serde_json::Value) -> Result<(), StructError>,
    finish: fn(S, &mut StructFields) -> Result<T, StructError>,
) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
{
    deserializer.deserialize_map(StructVisitor {
        shape,
        slots,
        put,
        finish,
    })
}

struct StructVisitor<S, T> {
    shape: &'static StructShape,
    slots: S,
    put: fn(&mut S, usize, serde_json::Value) -> Result<(), StructError>,
    finish: fn(S, &mut StructFields) -> Result<T, StructError>,
}

impl<'de, S, T> Visitor<'de> for StructVisitor<S, T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "struct {}", self.shape.name)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        let StructVisitor {
            shape,
            mut slots,
            put,
            finish,
        } = self;
        let mut seen = vec![false; shape.fields.len()];
        let mut fields = StructFields {
            fields: shape.fields,
            extras: Vec::new(),
        };
        while let Some(key) = map.next_key::<String>()? {
            match shape.fields.iter().position(|f| *f == key) {
                Some(index) => {
                    if seen[index] {
                        return Err(A::Error::duplicate_field(shape.fields[index]));
                    }
                    seen[index] = true;
                    map.next_value_seed(FieldSeed {
                        slots: &mut slots,
                        index,
                        put,
                    })?;
                }
                None => match shape.unknown {
                    UnknownProperties::Ignore => {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                    UnknownProperties::Deny => {
                        return Err(A::Error::unknown_field(&key, shape.fields));
                    }
                    UnknownProperties::Keep => {
                        let value = map.next_value()?;
                        fields.extras.push((key, value));
                    }
                },
            }
        }
        finish(slots, &mut fields).map_err(A::Error::custom)
    }
}

/// `FromStr` of a generated string enum: the index of `value` in
/// `shape.variants` (the generated code turns it into the variant), or
/// [`UnknownEnumValue`].
pub fn parse_string_enum(
    value: &str,
    shape: &'static EnumShape,
) -> Result<usize, UnknownEnumValue> {
    shape
        .variants
        .iter()
        .position(|v| *v == value)
        .ok_or_else(|| UnknownEnumValue::new(shape, value))
}

/// Longest excerpt of a refused string kept by [`UnknownEnumValue`], in
/// characters (the string may come from anywhere).
pub const UNKNOWN_ENUM_VALUE_EXCERPT: usize = 64;

/// A string that is none of a generated enum's values (its `FromStr`
/// error): "`"lost"` is not a value of `InputStatus`; its values are
/// `"active"` and `"disabled"`". Keeps at most
/// [`UNKNOWN_ENUM_VALUE_EXCERPT`] characters of the string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownEnumValue {
    shape: &'static EnumShape,
    value: String,
    truncated: bool,
}

impl UnknownEnumValue {
    fn new(shape: &'static EnumShape, value: &str) -> Self {
        let mut chars = value.char_indices();
        let end = chars
            .nth(UNKNOWN_ENUM_VALUE_EXCERPT)
            .map_or(value.len(), |(i, _)| i);
        Self {
            shape,
            value: value[..end].to_string(),
            truncated: end < value.len(),
        }
    }

    /// The enum's name.
    pub fn type_name(&self) -> &'static str {
        self.shape.name
    }

    /// The refused string (its first [`UNKNOWN_ENUM_VALUE_EXCERPT`]
    /// characters).
    pub fn value(&self) -> &str {
        &self.value
    }
}

impl fmt::Display for UnknownEnumValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let more = if self.truncated { "…" } else { "" };
        write!(
            f,
            "{:?}{more} is not a value of `{}`; its values are ",
            self.value, self.shape.name
        )?;
        let variants = self.shape.variants;
        for (i, v) in variants.iter().enumerate().take(8) {
            let sep = match i {
                0 => "",
                _ if i + 1 == variants.len() => " and ",
                _ => ", ",
            };
            write!(f, "{sep}{v:?}")?;
        }
        if variants.len() > 8 {
            write!(f, " and {} more", variants.len() - 8)?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownEnumValue {}

/// The shape of a generated string enum, for [`deserialize_string_enum`].
#[derive(Debug, PartialEq, Eq)]
pub struct EnumShape {
    /// The enum's name, for `expected enum …` messages.
    pub name: &'static str,
    /// The JSON strings of its variants, in variant order.
    pub variants: &'static [&'static str],
}

/// `Deserialize::deserialize` of a generated string enum, as serde's derive
/// reads a unit-only enum (also its `{"value": null}` form): the index of
/// the variant in `shape.variants`, which the generated code turns into
/// the variant with one `match`. Written once here instead of a derived
/// visitor per enum (docs/codegen.md, "Compile time at scale").
///
/// # Errors
/// `unknown variant …, expected one of …`, or `invalid type: …, expected
/// enum Name`, as the derive reports them.
pub fn deserialize_string_enum<'de, D: Deserializer<'de>>(
    deserializer: D,
    shape: &'static EnumShape,
) -> Result<usize, D::Error> {
    deserializer.deserialize_enum(shape.name, shape.variants, EnumVisitor(shape))
}

struct EnumVisitor(&'static EnumShape);

impl<'de> Visitor<'de> for EnumVisitor {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "enum {}", self.0.name)
    }
    fn visit_enum<A: serde::de::EnumAccess<'de>>(self, data: A) -> Result<usize, A::Error> {
        use serde::de::VariantAccess;
        let (index, variant) = data.variant_seed(self)?;
        variant.unit_variant()?;
        Ok(index)
    }
}

impl<'de> DeserializeSeed<'de> for EnumVisitor {
    type Value = usize;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<usize, D::Error> {
        deserializer.deserialize_identifier(VariantVisitor(self.0))
    }
}

struct VariantVisitor(&'static EnumShape);

impl Visitor<'_> for VariantVisitor {
    type Value = usize;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("variant identifier")
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<usize, E> {
        let variants = self.0.variants;
        match usize::try_from(v) {
            Ok(index) if index < variants.len() => Ok(index),
            _ => Err(E::invalid_value(
                Unexpected::Unsigned(v),
                &format!("variant index 0 <= i < {}", variants.len()).as_str(),
            )),
        }
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<usize, E> {
        let variants = self.0.variants;
        variants
            .iter()
            .position(|known| *known == v)
            .ok_or_else(|| E::unknown_variant(v, variants))
    }
    fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<usize, E> {
        match std::str::from_utf8(v) {
            Ok(v) => self.visit_str(v),
            Err(_) => Err(E::unknown_variant(
                &String::from_utf8_lossy(v),
                self.0.variants,
            )),
        }
    }
}

/// Reads one property's value and hands it to `put` from inside the
/// deserializer's own visitor call, so that serde_json reports a failed
/// conversion at the value, as serde's derive does.
struct FieldSeed<'a, S> {
    slots: &'a mut S,
    index: usize,
    put: fn(&mut S, usize, serde_json::Value) -> Result<(), StructError>,
}

impl<'de, S> DeserializeSeed<'de> for FieldSeed<'_, S> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<S> FieldSeed<'_, S> {
    fn put<E: serde::de::Error>(self, value: serde_json::Value) -> Result<(), E> {
        (self.put)(self.slots, self.index, value).map_err(E::custom)
    }
}

impl<'de, S> Visitor<'de> for FieldSeed<'_, S> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }
    fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<(), E> {
        self.put(serde_json::Value::Bool(v))
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<(), E> {
        self.put(serde_json::Value::from(v))
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<(), E> {
        self.put(serde_json::Value::from(v))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<(), E> {
        // serde_json's own `Value` reads a non-finite float as `null`.
        self.put(serde_json::Number::from_f64(v).map_or(serde_json::Value::Null, Into::into))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<(), E> {
        self.put(serde_json::Value::String(v.to_owned()))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<(), E> {
        self.put(serde_json::Value::String(v))
    }
    fn visit_unit<E: serde::de::Error>(self) -> Result<(), E> {
        self.put(serde_json::Value::Null)
    }
    fn visit_none<E: serde::de::Error>(self) -> Result<(), E> {
        self.put(serde_json::Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        self.put(value)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        let value =
            serde_json::Value::deserialize(serde::de::value::SeqAccessDeserializer::new(seq))?;
        self.put(value)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        let value =
            serde_json::Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        self.put(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Fields {
        #[serde(deserialize_with = "required_nullable")]
        required_nullable: Option<String>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "optional"
        )]
        optional: Option<String>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "optional"
        )]
        optional_nullable: Option<Option<String>>,
    }

    fn parse(v: serde_json::Value) -> Result<Fields, serde_json::Error> {
        serde_json::from_value(v)
    }

    #[test]
    fn required_nullable_must_be_present() {
        let err = parse(json!({})).unwrap_err().to_string();
        assert_eq!(err, "missing field `required_nullable`");
        let f = parse(json!({"required_nullable": null})).unwrap();
        assert_eq!(f.required_nullable, None);
        assert_eq!(
            serde_json::to_value(&f).unwrap(),
            json!({"required_nullable": null})
        );
    }

    #[test]
    fn optional_rejects_null_and_keeps_absent_absent() {
        let err = parse(json!({"required_nullable": "a", "optional": null})).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("invalid type: null, expected a string"),
            "{err}"
        );
        let f = parse(json!({"required_nullable": "a", "optional": "b"})).unwrap();
        assert_eq!(f.optional.as_deref(), Some("b"));
    }

    #[test]
    fn optional_nullable_is_a_double_option() {
        let absent = parse(json!({"required_nullable": "a"})).unwrap();
        assert_eq!(absent.optional_nullable, None);
        let null = parse(json!({"required_nullable": "a", "optional_nullable": null})).unwrap();
        assert_eq!(null.optional_nullable, Some(None));
        let value = parse(json!({"required_nullable": "a", "optional_nullable": "x"})).unwrap();
        assert_eq!(value.optional_nullable, Some(Some("x".into())));
        for f in [absent, null, value] {
            let back = serde_json::to_value(&f).unwrap();
            assert_eq!(parse(back).unwrap(), f);
        }
        let back = serde_json::to_value(
            parse(json!({"required_nullable": "a", "optional_nullable": null})).unwrap(),
        )
        .unwrap();
        assert_eq!(
            back,
            json!({"required_nullable": "a", "optional_nullable": null})
        );
    }

    #[test]
    fn const_accepts_only_its_value() {
        let c = ConstValue::I64(42);
        assert!(deserialize_const(json!(42), &c).is_ok());
        assert!(deserialize_const(json!(42.0), &c).is_ok());
        let err = deserialize_const(json!(41), &c).unwrap_err().to_string();
        assert_eq!(err, "expected the constant 42, found 41");
        assert!(deserialize_const(json!("42"), &c).is_err());
        assert!(deserialize_const(json!(true), &ConstValue::Bool(true)).is_ok());
        assert!(deserialize_const(json!(false), &ConstValue::Bool(true)).is_err());
        assert!(deserialize_const(json!(1.5), &ConstValue::F64(1.5)).is_ok());
        assert!(deserialize_const(json!(null), &ConstValue::Null).is_ok());
        assert_eq!(
            serialize_const(&c, serde_json::value::Serializer).unwrap(),
            json!(42)
        );
        assert_eq!(
            serialize_const(&ConstValue::F64(1.5), serde_json::value::Serializer).unwrap(),
            json!(1.5)
        );
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Counts {
        #[serde(deserialize_with = "integer")]
        count: i64,
        #[serde(deserialize_with = "integer")]
        big: u64,
        #[serde(deserialize_with = "integer")]
        nested: Vec<Option<i64>>,
        #[serde(deserialize_with = "integer")]
        by_name: BTreeMap<String, Box<i64>>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "optional_integer"
        )]
        maybe: Option<i64>,
    }

    #[test]
    fn integers_accept_numbers_with_a_zero_fraction_and_write_integers() {
        let input = json!({
            "count": 2.0, "big": 1e19, "nested": [1, null, -3.0],
            "by_name": {"a": 4e0}, "maybe": 5.0
        });
        let counts: Counts = serde_json::from_value(input).unwrap();
        assert_eq!(
            counts,
            Counts {
                count: 2,
                big: 10_000_000_000_000_000_000,
                nested: vec![Some(1), None, Some(-3)],
                by_name: BTreeMap::from([("a".to_string(), Box::new(4))]),
                maybe: Some(5),
            }
        );
        assert_eq!(
            serde_json::to_string(&counts).unwrap(),
            r#"{"count":2,"big":10000000000000000000,"nested":[1,null,-3],"by_name":{"a":4},"maybe":5}"#
        );
        // From text too (serde_json's own deserializer, not `Value`'s).
        let text = r#"{"count":-9.223372036854775808e18,"big":0,"nested":[],"by_name":{}}"#;
        let counts: Counts = serde_json::from_str(text).unwrap();
        assert_eq!((counts.count, counts.maybe), (i64::MIN, None));
    }

    #[test]
    fn integers_refuse_fractions_out_of_range_values_and_other_types() {
        let base = || json!({"count": 1, "big": 1, "nested": [], "by_name": {}});
        let err = |field: &str, value: serde_json::Value| {
            let mut v = base();
            v[field] = value;
            serde_json::from_value::<Counts>(v).unwrap_err().to_string()
        };
        assert_eq!(
            err("count", json!(2.5)),
            "invalid type: floating point `2.5`, expected an integer"
        );
        assert_eq!(
            err("count", json!(9.3e18)),
            "invalid value: floating point `9.3e+18`, expected an integer in range"
        );
        assert_eq!(
            err("big", json!(-1)),
            "invalid value: integer `-1`, expected a u64"
        );
        assert_eq!(
            err("count", json!(u64::MAX)),
            "invalid value: integer `18446744073709551615`, expected an i64"
        );
        assert_eq!(
            err("count", json!("2")),
            "invalid type: string \"2\", expected an integer"
        );
        assert_eq!(
            err("nested", json!([0.5])),
            "invalid type: floating point `0.5`, expected an integer"
        );
        let mut v = base();
        v.as_object_mut().unwrap().remove("count");
        assert_eq!(
            serde_json::from_value::<Counts>(v).unwrap_err().to_string(),
            "missing field `count`"
        );
        let mut v = base();
        v["maybe"] = json!(null);
        assert_eq!(
            serde_json::from_value::<Counts>(v).unwrap_err().to_string(),
            "invalid type: null, expected an integer"
        );
    }

    #[test]
    fn tuple_with_rest_round_trips_and_requires_the_prefix() {
        type Row = TupleWithRest<(String, bool), i64>;
        let row: Row = serde_json::from_value(json!(["a", true, 1, 2])).unwrap();
        assert_eq!(
            row,
            TupleWithRest {
                prefix: ("a".to_string(), true),
                rest: vec![1, 2]
            }
        );
        assert_eq!(
            serde_json::to_value(&row).unwrap(),
            json!(["a", true, 1, 2])
        );
        let short: Row = serde_json::from_value(json!(["a", true])).unwrap();
        assert_eq!(serde_json::to_value(&short).unwrap(), json!(["a", true]));
        let err = serde_json::from_value::<Row>(json!(["a"]))
            .unwrap_err()
            .to_string();
        assert_eq!(
            err,
            "invalid length 1, expected an array of at least 2 elements"
        );
        assert!(serde_json::from_value::<Row>(json!(["a", true, "x"])).is_err());
        assert!(serde_json::from_value::<Row>(json!({})).is_err());
    }
}

/// The hand-written `Deserialize` of generated structs against serde's
/// derive with the attributes generated code used before (`default`,
/// `deserialize_with`, `deny_unknown_fields`, `flatten`): the same values
/// and the same messages on the same JSON texts.
#[cfg(test)]
mod struct_reader_tests {
    use super::*;

    /// What generated code used to derive.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Derived {
        name: String,
        maybe: Option<String>,
        #[serde(deserialize_with = "integer")]
        count: i64,
        #[serde(deserialize_with = "required_nullable")]
        note: Option<String>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "optional"
        )]
        tag: Option<String>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "optional"
        )]
        label: Option<Option<String>>,
        #[serde(
            default,
            skip_serializing_if = "Option::is_none",
            deserialize_with = "optional_integer"
        )]
        limit: Option<u64>,
        #[serde(flatten)]
        extra: BTreeMap<String, i64>,
    }

    /// The same struct as generated code writes it now.
    #[derive(Debug, PartialEq, Serialize)]
    struct Read {
        name: String,
        maybe: Option<String>,
        count: i64,
        note: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tag: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        label: Option<Option<String>>,
        #[serde(skip_serializing_if = "Option::is_none")]
        limit: Option<u64>,
        #[serde(flatten)]
        extra: BTreeMap<String, i64>,
    }

    impl<'de> Deserialize<'de> for Read {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            static SHAPE: StructShape = StructShape {
                name: "Read",
                fields: &["name", "maybe", "count", "note", "tag", "label", "limit"],
                unknown: UnknownProperties::Keep,
            };
            #[derive(Default)]
            struct Slots {
                name: Option<String>,
                maybe: Option<Option<String>>,
                count: Option<i64>,
                note: Option<Option<String>>,
                tag: Option<String>,
                label: Option<Option<String>>,
                limit: Option<u64>,
            }
            fn put(s: &mut Slots, i: usize, v: Json) -> Result<(), StructError> {
                match i {
                    0 => s.name = Some(value(v)?),
                    1 => s.maybe = Some(value(v)?),
                    2 => s.count = Some(integer_value(v)?),
                    3 => s.note = Some(value(v)?),
                    4 => s.tag = Some(value(v)?),
                    5 => s.label = Some(value(v)?),
                    6 => s.limit = Some(integer_value(v)?),
                    _ => {}
                }
                Ok(())
            }
            fn finish(s: Slots, f: &mut StructFields) -> Result<Read, StructError> {
                Ok(Read {
                    name: f.required(0, s.name)?,
                    maybe: f.required(1, s.maybe)?,
                    count: f.present(2, s.count)?,
                    note: f.present(3, s.note)?,
                    tag: s.tag,
                    label: s.label,
                    limit: s.limit,
                    extra: f.extras()?,
                })
            }
            deserialize_struct(deserializer, &SHAPE, Slots::default(), put, finish)
        }
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    #[serde(deny_unknown_fields)]
    struct DerivedDeny {
        a: String,
    }

    #[derive(Debug, PartialEq, Serialize)]
    struct ReadDeny {
        a: String,
    }

    impl<'de> Deserialize<'de> for ReadDeny {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            static SHAPE: StructShape = StructShape {
                name: "ReadDeny",
                fields: &["a"],
                unknown: UnknownProperties::Deny,
            };
            struct Slots {
                a: Option<String>,
            }
            fn put(s: &mut Slots, i: usize, v: Json) -> Result<(), StructError> {
                if i == 0 {
                    s.a = Some(value(v)?);
                }
                Ok(())
            }
            fn finish(s: Slots, f: &mut StructFields) -> Result<ReadDeny, StructError> {
                Ok(ReadDeny {
                    a: f.required(0, s.a)?,
                })
            }
            deserialize_struct(deserializer, &SHAPE, Slots { a: None }, put, finish)
        }
    }

    /// The outcome with serde_json's position of an error (`… at line 1
    /// column 9`) and with the struct's name unified.
    fn outcome<T: serde::de::DeserializeOwned + Serialize>(text: &str) -> Result<String, String> {
        match serde_json::from_str::<T>(text) {
            Ok(v) => Ok(serde_json::to_string(&v).unwrap()),
            Err(e) => Err(e
                .to_string()
                .replace("struct Read", "struct Derived")
                .replace("ReadDeny", "DerivedDeny")),
        }
    }

    #[test]
    fn struct_reader_gives_what_the_derive_gave() {
        let base = r#""name":"n","maybe":null,"count":1,"note":null"#;
        let texts = [
            format!("{{{base}}}"),
            format!(r#"{{{base},"tag":"t","label":null,"limit":3}}"#),
            format!(r#"{{{base},"label":"l","limit":3.0,"x":1,"y":2,"x":5}}"#),
            r#"{"name":"n","count":2.0,"note":"x"}"#.to_string(),
            r#"{"maybe":null,"count":1,"note":null}"#.to_string(),
            r#"{"name":"n","maybe":null,"note":null}"#.to_string(),
            r#"{"name":"n","maybe":null,"count":1}"#.to_string(),
            format!(r#"{{{base},"tag":null}}"#),
            format!(r#"{{{base},"limit":2.5}}"#),
            format!(r#"{{{base},"count":2.5}}"#),
            format!(r#"{{{base},"name":"again"}}"#),
            format!(r#"{{{base},"x":"not an integer"}}"#),
            r#"{"name":1,"maybe":null,"count":1,"note":null}"#.to_string(),
            "1".to_string(),
            "null".to_string(),
            r#""text""#.to_string(),
            format!("{{\n  {base},\n  \"limit\": -1,\n  \"tag\": \"t\"\n}}"),
        ];
        for text in &texts {
            assert_eq!(outcome::<Read>(text), outcome::<Derived>(text), "{text}");
        }
        for text in [
            r#"{"a":"x"}"#,
            r#"{"a":"x","b":1}"#,
            r#"{"b":1,"a":"x"}"#,
            "{}",
        ] {
            assert_eq!(
                outcome::<ReadDeny>(text),
                outcome::<DerivedDeny>(text),
                "{text}"
            );
        }
    }

    #[test]
    fn struct_reader_refuses_the_array_form_the_derive_accepted() {
        // serde's derive also read a struct from a JSON array of its
        // fields in order; a JSON Schema object is never an array.
        assert_eq!(
            serde_json::from_str::<DerivedDeny>(r#"["x"]"#).unwrap(),
            DerivedDeny { a: "x".into() }
        );
        assert_eq!(
            outcome::<ReadDeny>(r#"["x"]"#),
            Err("invalid type: sequence, expected struct DerivedDeny at line 1 column 0".into())
        );
    }

    #[test]
    fn struct_reader_reads_from_a_value_too() {
        let value =
            serde_json::json!({"name": "n", "maybe": "m", "count": 4.0, "note": "x", "z": 9});
        let read: Read = serde_json::from_value(value).unwrap();
        assert_eq!(read.count, 4);
        assert_eq!(read.maybe.as_deref(), Some("m"));
        assert_eq!(read.extra, BTreeMap::from([("z".to_string(), 9)]));
    }

    #[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
    enum DerivedEnum {
        #[serde(rename = "in-progress")]
        InProgress,
        #[serde(rename = "done")]
        Done,
    }

    #[derive(Debug, Clone, Copy, PartialEq, Serialize)]
    enum ReadEnum {
        #[serde(rename = "in-progress")]
        InProgress,
        #[serde(rename = "done")]
        Done,
    }

    impl<'de> Deserialize<'de> for ReadEnum {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            static SHAPE: EnumShape = EnumShape {
                name: "ReadEnum",
                variants: &["in-progress", "done"],
            };
            Ok(match deserialize_string_enum(deserializer, &SHAPE)? {
                0 => Self::InProgress,
                _ => Self::Done,
            })
        }
    }

    #[test]
    fn string_enum_reader_gives_what_the_derive_gave() {
        for text in [
            r#""in-progress""#,
            r#""done""#,
            r#""Done""#,
            r#""""#,
            "1",
            "null",
            "[]",
            r#"{"done":null}"#,
            r#"{"done":1}"#,
            r#"{"nope":null}"#,
            r#"{"done":null,"x":1}"#,
        ] {
            let derived = outcome::<DerivedEnum>(text).map_err(|e| e.replace("DerivedEnum", "E"));
            let read = outcome::<ReadEnum>(text).map_err(|e| e.replace("ReadEnum", "E"));
            assert_eq!(read, derived, "{text}");
        }
        let value = serde_json::json!("done");
        assert_eq!(
            serde_json::from_value::<ReadEnum>(value).unwrap(),
            ReadEnum::Done
        );
    }

    static STATUS: EnumShape = EnumShape {
        name: "InputStatus",
        variants: &["active", "disabled", "in-progress"],
    };

    #[test]
    fn string_enum_parse_gives_the_index_or_says_what_the_values_are() {
        assert_eq!(parse_string_enum("disabled", &STATUS), Ok(1));
        assert_eq!(parse_string_enum("in-progress", &STATUS), Ok(2));
        let err = parse_string_enum("Active", &STATUS).unwrap_err();
        assert_eq!((err.type_name(), err.value()), ("InputStatus", "Active"));
        assert_eq!(
            err.to_string(),
            r#""Active" is not a value of `InputStatus`; its values are "active", "disabled" and "in-progress""#
        );
        let long = "é".repeat(100);
        let err = parse_string_enum(&long, &STATUS).unwrap_err();
        assert_eq!(err.value().chars().count(), UNKNOWN_ENUM_VALUE_EXCERPT);
        assert!(err
            .to_string()
            .starts_with(&format!("{:?}…", "é".repeat(64))));
        static MANY: EnumShape = EnumShape {
            name: "E",
            variants: &["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"],
        };
        assert_eq!(
            parse_string_enum("z", &MANY).unwrap_err().to_string(),
            r#""z" is not a value of `E`; its values are "a", "b", "c", "d", "e", "f", "g", "h" and 2 more"#
        );
    }
}
