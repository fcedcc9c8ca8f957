//! Tool arguments as JSON: parsing the arguments string once ([`ToolArgs`]),
//! reading them into a tool's typed arguments ([`read`]), and the one wording
//! of an unknown or ill-typed argument. A leaf: only the error type below it.

use serde::de::value::{MapAccessDeserializer, StrDeserializer};
use serde::de::{DeserializeOwned, DeserializeSeed, IntoDeserializer, MapAccess, Visitor};
use serde::{Deserializer, forward_to_deserialize_any};
use serde_json::{Map, Value};

use crate::error::{ErrorCode, ToolError};

/// A tool call's arguments, parsed once from the JSON text a host sent: a
/// JSON object (an empty text counts as `{}`), or the error saying why it is
/// not one. Everything that reads one call (the tool, its permission
/// pattern, the gate, the audit log) reads this one parse.
///
/// ```
/// use bash_mcp::ToolArgs;
/// let args = ToolArgs::parse(r#"{"command": "ls"}"#);
/// assert_eq!(args.get("command").and_then(|c| c.as_str()), Some("ls"));
/// assert!(ToolArgs::parse("[1, 2]").object().is_err());
/// assert!(ToolArgs::parse("").object().unwrap().is_empty());
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ToolArgs(Result<Map<String, Value>, ToolError>);

impl ToolArgs {
    /// Parses the arguments' JSON text.
    pub fn parse(args_json: &str) -> Self {
        Self(parse_args(args_json))
    }

    /// Arguments already held as JSON (MCP's `arguments`): an object, else
    /// the error a text of that type gets.
    pub fn from_value(value: Value) -> Self {
        match value {
            Value::Object(map) => Self(Ok(map)),
            other => Self(Err(not_an_object(&other))),
        }
    }

    /// The arguments, or why they are not a JSON object.
    pub fn object(&self) -> Result<&Map<String, Value>, &ToolError> {
        self.0.as_ref()
    }

    /// The arguments to change, when they are an object.
    pub(crate) fn object_mut(&mut self) -> Option<&mut Map<String, Value>> {
        self.0.as_mut().ok()
    }

    /// The argument `key`; `None` when it is absent or the arguments are not an object.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.as_ref().ok()?.get(key)
    }
}

impl From<Map<String, Value>> for ToolArgs {
    fn from(map: Map<String, Value>) -> Self {
        Self(Ok(map))
    }
}

fn not_an_object(value: &Value) -> ToolError {
    ToolError::new(
        ErrorCode::InvalidJson,
        format!("tool arguments must be a JSON object, got {}", json_kind(value)),
        "send the arguments as an object, e.g. {\"command\": \"ls\"}",
    )
}

/// Parses tool arguments: a JSON object (an empty string counts as `{}`).
fn parse_args(args_json: &str) -> Result<Map<String, Value>, ToolError> {
    if args_json.trim().is_empty() {
        return Ok(Map::new());
    }
    match serde_json::from_str::<Value>(args_json) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(not_an_object(&other)),
        Err(e) => Err(ToolError::new(
            ErrorCode::InvalidJson,
            format!("tool arguments are not valid JSON: {e}"),
            "send the arguments as a JSON object, e.g. {\"command\": \"ls\"}",
        )),
    }
}

/// Refuses argument names a tool does not take: the one wording, for every
/// tool, naming all of them and what the tool accepts.
pub(crate) fn refuse_unknown(tool: &str, accepted: &[&str], args: &Map<String, Value>) -> Result<(), ToolError> {
    let unknown: Vec<&str> = args
        .keys()
        .map(String::as_str)
        .filter(|k| !accepted.contains(k))
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(ToolError::new(
        ErrorCode::UnknownArgument,
        format!("unknown argument(s) for {tool}: {}", unknown.join(", ")),
        if accepted.is_empty() {
            format!("{tool} takes no arguments")
        } else {
            format!("{tool} accepts: {}", accepted.join(", "))
        },
    ))
}

/// Reads a tool's arguments into `T`, a serde struct with one field per
/// argument the tool reads, in the order they are checked; an optional
/// argument is an `Option` field, for which `null` is the same as absent.
///
/// Names outside `accepted` (the arguments the tool lists) are refused
/// first, all of them at once ([`refuse_unknown`]). Then the fields are
/// read in their order, and the first that does not read as its type (or a
/// required one that is absent) is worded by `wrong`, given its name and
/// its value (`None`: absent), so each tool keeps its own error codes and
/// hints while [`must_be`] words the type.
pub(crate) fn read<T: DeserializeOwned>(
    tool: &str,
    accepted: &[&str],
    args: &Map<String, Value>,
    wrong: impl FnOnce(&str, Option<&Value>) -> ToolError,
) -> Result<T, ToolError> {
    refuse_unknown(tool, accepted, args)?;
    let mut walk = Walk {
        fields: fields_of::<T>(),
        args,
        next: 0,
        current: None,
    };
    T::deserialize(MapAccessDeserializer::new(&mut walk)).map_err(|_| match walk.current {
        Some(key) => wrong(key, args.get(key)),
        None => ToolError::new(
            ErrorCode::Internal,
            format!("the arguments of {tool} could not be read"),
            "report this as a bug",
        ),
    })
}

/// The field names of the struct `T`, in their order, as serde's derive
/// declares them.
pub(crate) fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut names = FieldNames(&[]);
    // The derive hands its field list to `deserialize_struct`, which stops there.
    let _ = T::deserialize(&mut names);
    names.0
}

/// A deserializer that only learns the field names of the struct asked of it.
struct FieldNames(&'static [&'static str]);

impl<'de> Deserializer<'de> for &mut FieldNames {
    type Error = serde::de::value::Error;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0 = fields;
        Err(serde::de::Error::custom("only the field names are read"))
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Self::Error> {
        Err(serde::de::Error::custom("arguments are read into a struct"))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

/// The arguments as serde's struct visitor takes them: every field in the
/// struct's order, an absent one as [`Absent`], remembering the field
/// being read so that an error can name it.
struct Walk<'a> {
    fields: &'static [&'static str],
    args: &'a Map<String, Value>,
    next: usize,
    current: Option<&'static str>,
}

impl<'a> MapAccess<'a> for Walk<'a> {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'a>>(&mut self, seed: K) -> Result<Option<K::Value>, Self::Error> {
        let Some(&key) = self.fields.get(self.next) else {
            return Ok(None);
        };
        self.next += 1;
        self.current = Some(key);
        let name: StrDeserializer<'_, Self::Error> = key.into_deserializer();
        seed.deserialize(name).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'a>>(&mut self, seed: V) -> Result<V::Value, Self::Error> {
        match self.current.and_then(|key| self.args.get(key)) {
            Some(value) => seed.deserialize(value),
            None => seed.deserialize(Absent),
        }
    }
}

/// An argument not given: `None` to an `Option` field, an error to any other.
struct Absent;

impl<'de> Deserializer<'de> for Absent {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        visitor.visit_none()
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// The one wording of an argument of the wrong JSON type (`expected`: "a
/// string", "true or false", ...); `got` is `None` for a missing one.
pub(crate) fn must_be(key: &str, expected: &str, got: Option<&Value>) -> String {
    format!("`{key}` must be {expected}, got {}", got.map_or("nothing", json_kind))
}

/// A short name for a JSON value's type, for error messages.
pub(crate) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_arguments_are_all_named_with_what_the_tool_accepts() {
        let args = |v: Value| v.as_object().unwrap().clone();
        assert!(refuse_unknown("t", &["a", "b"], &args(serde_json::json!({"a": 1}))).is_ok());
        let e = refuse_unknown("t", &["a", "b"], &args(serde_json::json!({"a": 1, "x": 2, "y": 3}))).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnknownArgument);
        assert_eq!(e.message, "unknown argument(s) for t: x, y");
        assert_eq!(e.hint, "t accepts: a, b");
        let e = refuse_unknown("t", &[], &args(serde_json::json!({"x": 1}))).unwrap_err();
        assert_eq!(e.hint, "t takes no arguments");
        assert_eq!(
            must_be("k", "a string", Some(&Value::Bool(true))),
            "`k` must be a string, got a boolean"
        );
        assert_eq!(must_be("k", "a string", None), "`k` must be a string, got nothing");
    }

    #[derive(Debug, serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Sample {
        name: String,
        #[serde(rename = "count")]
        _count: Option<u32>,
        flag: Option<bool>,
    }

    /// The key and value `read` gave its `wrong`, as an error to compare.
    fn reported(key: &str, got: Option<&Value>) -> ToolError {
        ToolError::new(
            ErrorCode::InvalidArguments,
            key,
            got.map_or("absent".into(), Value::to_string),
        )
    }

    fn read_sample(args: Value) -> Result<Sample, ToolError> {
        read("t", &["name", "count", "flag"], args.as_object().unwrap(), reported)
    }

    #[test]
    fn fields_are_the_structs_in_its_order_under_their_argument_names() {
        assert_eq!(fields_of::<Sample>(), ["name", "count", "flag"]);
    }

    #[test]
    fn arguments_read_into_their_types_and_null_is_absent_for_an_option() {
        let sample = read_sample(serde_json::json!({"name": "a", "count": 3, "flag": null})).unwrap();
        assert_eq!((sample.name.as_str(), sample._count, sample.flag), ("a", Some(3), None));
        let sample = read_sample(serde_json::json!({"name": "b"})).unwrap();
        assert_eq!((sample._count, sample.flag), (None, None));
    }

    #[test]
    fn unknown_names_are_refused_before_any_type_is_checked() {
        let e = read_sample(serde_json::json!({"name": 1, "x": 2})).unwrap_err();
        assert_eq!(e.code, ErrorCode::UnknownArgument);
        assert_eq!(e.message, "unknown argument(s) for t: x");
    }

    #[test]
    fn the_first_argument_in_the_structs_order_that_does_not_read_is_reported_with_its_value() {
        // The map's own order (alphabetical) would put `count` first.
        let e = read_sample(serde_json::json!({"flag": "yes", "count": -1, "name": "a"})).unwrap_err();
        assert_eq!((e.message.as_str(), e.hint.as_str()), ("count", "-1"));
        let e = read_sample(serde_json::json!({"name": "a", "flag": "yes"})).unwrap_err();
        assert_eq!((e.message.as_str(), e.hint.as_str()), ("flag", "\"yes\""));
    }

    #[test]
    fn a_required_argument_absent_or_null_is_reported_at_its_place() {
        let e = read_sample(serde_json::json!({"flag": "yes"})).unwrap_err();
        assert_eq!((e.message.as_str(), e.hint.as_str()), ("name", "absent"));
        let e = read_sample(serde_json::json!({"name": null})).unwrap_err();
        assert_eq!((e.message.as_str(), e.hint.as_str()), ("name", "null"));
    }
}
