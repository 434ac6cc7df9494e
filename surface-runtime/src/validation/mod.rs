//! Validators generated at compile time from JSON Schemas: the types the
//! generated code returns and the helpers it calls (docs/validation.md).
//!
//! `manifest!` turns every input (and output) schema into plain Rust: one
//! [`Validator`] per schema, a pair of functions — a fast
//! [`Validator::is_valid`] that allocates nothing, and an error-collecting
//! pass that runs only when the instance is invalid. Errors have the shape
//! the invocation pipeline returns in `details.errors`:
//! `{"instancePath": "/tags/0", "keyword": "minLength", "message": …}`, where
//! the message never echoes an instance value (it names the schema's limits
//! instead; `additionalProperties` names the unexpected property names, as
//! the runtime validator does).
//!
//! The helpers in [`rt`], [`Path`] and [`Errors`] are what generated code
//! calls; they are public so that it can, not for direct use.

use std::borrow::Cow;
use std::fmt::Write as _;

use serde_json::{json, Value};

pub mod rt;

#[cfg(test)]
mod tests;

/// The deepest chain of recursive `$ref` calls one validation follows
/// (schemas that refer to themselves, e.g. a tree of nodes). An instance
/// nested deeper than that under a recursive schema is invalid, with one
/// error whose keyword is `$ref`. A JSON text parsed by `serde_json` nests at
/// most 128 levels, below this limit.
pub const MAX_REF_DEPTH: u32 = 256;

/// A validator generated from one JSON Schema: two plain functions.
///
/// Built by the code `manifest!` generates (a `const`), never by hand.
#[derive(Clone, Copy)]
pub struct Validator {
    is_valid: fn(&Value, u32) -> bool,
    collect: fn(&Value, &Path<'_>, &mut Errors, u32),
}

impl std::fmt::Debug for Validator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Validator")
    }
}

impl Validator {
    /// Wraps the generated pair: `is_valid(instance, depth)` and
    /// `collect(instance, path, errors, depth)`. Both start at depth 0.
    #[doc(hidden)]
    pub const fn new(
        is_valid: fn(&Value, u32) -> bool,
        collect: fn(&Value, &Path<'_>, &mut Errors, u32),
    ) -> Self {
        Validator { is_valid, collect }
    }

    /// Whether `instance` is valid against the schema. Allocates nothing
    /// (except for `propertyNames`, which checks each key as a string value).
    #[inline]
    pub fn is_valid(&self, instance: &Value) -> bool {
        (self.is_valid)(instance, 0)
    }

    /// Every violation of the schema by `instance`, in the order the schema
    /// lists its keywords (empty when valid). The number of errors is bounded
    /// by the size of the instance times the size of the schema.
    pub fn errors(&self, instance: &Value) -> Vec<ValidationError> {
        if self.is_valid(instance) {
            return Vec::new();
        }
        let mut errors = Errors::default();
        (self.collect)(instance, &Path::ROOT, &mut errors, 0);
        errors.into_vec()
    }

    /// The first `limit` violations of the schema by `instance` (in the
    /// order of [`Validator::errors`]; empty when valid), whether more were
    /// left out, and the top-level fields ([`ValidationError::field`]) of
    /// those left out. Memory stays bounded by `limit` plus the number of
    /// distinct top-level fields, whatever the number of violations; the
    /// walk is still linear in the instance times the schema.
    pub fn errors_limited(&self, instance: &Value, limit: usize) -> LimitedErrors {
        if self.is_valid(instance) {
            return LimitedErrors::default();
        }
        let mut errors = Errors {
            limit: Some(limit),
            ..Errors::default()
        };
        (self.collect)(instance, &Path::ROOT, &mut errors, 0);
        LimitedErrors {
            errors: errors.list,
            truncated: errors.truncated,
            unlisted_fields: errors.unlisted_fields.into_iter().collect(),
        }
    }

    /// `Ok(())` when valid, else every violation ([`Validator::errors`]).
    pub fn validate(&self, instance: &Value) -> Result<(), Vec<ValidationError>> {
        let errors = self.errors(instance);
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }
}

/// What [`Validator::errors_limited`] returns.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LimitedErrors {
    /// The first violations, at most the limit.
    pub errors: Vec<ValidationError>,
    /// Whether violations were left out.
    pub truncated: bool,
    /// The distinct top-level fields of the violations left out, sorted.
    pub unlisted_fields: Vec<String>,
}

/// One violation: where in the instance, which keyword, and a message that
/// never echoes instance values.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValidationError {
    /// JSON Pointer (RFC 6901) to the offending value; `""` is the instance.
    pub instance_path: String,
    /// The schema keyword that failed (`"type"`, `"required"`, …; a `false`
    /// schema reports `"falseSchema"`).
    pub keyword: &'static str,
    /// A human-readable, masked message (it names the schema's limits,
    /// never the instance's values).
    pub message: Cow<'static, str>,
    /// The top-level property of the instance the error concerns: the first
    /// segment of `instance_path` when it is a property name, else — for
    /// `required` — the missing property. `None` otherwise.
    pub field: Option<String>,
}

impl ValidationError {
    /// The error as the pipeline reports it in `details.errors`:
    /// `{"instancePath", "keyword", "message"}`.
    pub fn to_json(&self) -> Value {
        json!({
            "instancePath": self.instance_path,
            "keyword": self.keyword,
            "message": self.message,
        })
    }
}

impl std::fmt::Display for ValidationError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.instance_path.is_empty() {
            write!(f, "{} ({})", self.message, self.keyword)
        } else {
            write!(
                f,
                "{}: {} ({})",
                self.instance_path, self.message, self.keyword
            )
        }
    }
}

/// A location in the instance, as a chain of borrowed segments on the stack:
/// nothing is allocated until an error renders it.
#[derive(Clone, Copy, Debug)]
pub struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    segment: Segment<'a>,
}

#[derive(Clone, Copy, Debug)]
enum Segment<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

impl<'a> Path<'a> {
    /// The instance itself (`""`).
    pub const ROOT: Path<'static> = Path {
        parent: None,
        segment: Segment::Root,
    };

    /// The property `key` of the value at this path.
    #[inline]
    pub fn key<'b>(&'b self, key: &'b str) -> Path<'b> {
        Path {
            parent: Some(self),
            segment: Segment::Key(key),
        }
    }

    /// The item `index` of the array at this path.
    #[inline]
    pub fn index(&self, index: usize) -> Path<'_> {
        Path {
            parent: Some(self),
            segment: Segment::Index(index),
        }
    }

    /// The JSON Pointer of this path (`~` and `/` escaped as `~0`, `~1`).
    pub fn to_pointer(&self) -> String {
        let mut segments = Vec::new();
        let mut at = Some(self);
        while let Some(path) = at {
            segments.push(path.segment);
            at = path.parent;
        }
        let mut out = String::new();
        for segment in segments.iter().rev() {
            match segment {
                Segment::Root => {}
                Segment::Key(key) => surface_manifest::schema::push_token(&mut out, key),
                Segment::Index(i) => {
                    let _ = write!(out, "/{i}");
                }
            }
        }
        out
    }

    /// The first segment below the root.
    fn first(&self) -> Option<Segment<'a>> {
        let mut at = self;
        let mut first = None;
        loop {
            match at.segment {
                Segment::Root => {}
                segment => first = Some(segment),
            }
            match at.parent {
                Some(parent) => at = parent,
                None => return first,
            }
        }
    }
}

/// The errors collected by the error pass of a generated validator.
#[derive(Debug, Default)]
pub struct Errors {
    list: Vec<ValidationError>,
    /// At most this many are listed (`None`: all).
    limit: Option<usize>,
    truncated: bool,
    unlisted_fields: std::collections::BTreeSet<String>,
}

impl Errors {
    /// The collected errors, in order.
    pub fn into_vec(self) -> Vec<ValidationError> {
        self.list
    }

    /// Records `keyword` failing at `path`.
    #[cold]
    pub fn push(&mut self, path: &Path<'_>, keyword: &'static str, message: &'static str) {
        self.push_owned(path, keyword, Cow::Borrowed(message), None);
    }

    /// Records the missing required property `property` of the object at
    /// `path` (`required`, `dependentRequired`, `dependencies`).
    #[cold]
    pub fn required(&mut self, path: &Path<'_>, property: &'static str, message: &'static str) {
        self.push_owned(path, "required", Cow::Borrowed(message), Some(property));
    }

    /// Records the properties `additionalProperties: false` rejects.
    #[cold]
    pub fn additional_properties(&mut self, path: &Path<'_>, unexpected: &[&str]) {
        let mut message = String::from("Additional properties are not allowed (");
        for (n, name) in unexpected.iter().enumerate() {
            if n > 0 {
                message.push_str(", ");
            }
            message.push('\'');
            message.push_str(name);
            message.push('\'');
        }
        message.push_str(if unexpected.len() == 1 {
            " was unexpected)"
        } else {
            " were unexpected)"
        });
        self.push_owned(path, "additionalProperties", Cow::Owned(message), None);
    }

    /// Records `extra` items past an array-form `items` that
    /// `additionalItems: false` rejects.
    #[cold]
    pub fn additional_items(&mut self, path: &Path<'_>, extra: usize) {
        let message = format!(
            "Additional items are not allowed ({extra} item{})",
            if extra == 1 { "" } else { "s" }
        );
        self.push_owned(path, "additionalItems", Cow::Owned(message), None);
    }

    /// Records the errors a property name produced against `propertyNames`
    /// (collected in `inner`) as `propertyNames` errors of the object at
    /// `path`.
    #[cold]
    pub fn property_names(&mut self, path: &Path<'_>, inner: Errors) {
        for error in inner.list {
            self.push_owned(path, "propertyNames", error.message, None);
        }
    }

    /// Records a recursion past [`MAX_REF_DEPTH`].
    #[cold]
    pub fn too_deep(&mut self, path: &Path<'_>) {
        self.push(path, "$ref", "value nests too deeply to validate");
    }

    fn push_owned(
        &mut self,
        path: &Path<'_>,
        keyword: &'static str,
        message: Cow<'static, str>,
        required: Option<&str>,
    ) {
        if self.limit.is_some_and(|limit| self.list.len() >= limit) {
            self.truncated = true;
            let field = match path.first() {
                Some(Segment::Key(key)) => Some(key),
                _ => required,
            };
            if let Some(field) = field {
                if !self.unlisted_fields.contains(field) {
                    self.unlisted_fields.insert(field.to_string());
                }
            }
            return;
        }
        let field = match path.first() {
            Some(Segment::Key(key)) => Some(key.to_string()),
            _ => required.map(str::to_string),
        };
        self.list.push(ValidationError {
            instance_path: path.to_pointer(),
            keyword,
            message,
            field,
        });
    }
}
