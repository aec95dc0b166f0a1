//! A `KEY=VALUE` of the command line read as its property's schema says: `42` is the string
//! "42" for a string property and the number for a number property, `true` a boolean for a
//! boolean one, JSON for an object or an array; with no schema to ask, JSON when it parses
//! as JSON, else a string.

use serde_json::Value;

/// The JSON types a property's schema allows (`type`, as a name or a list, and the types of
/// its `anyOf`/`oneOf` members and `enum`/`const` values); empty when it does not say.
fn allowed(property: &Value) -> Vec<&str> {
    let mut types = Vec::new();
    match property.get("type") {
        Some(Value::String(one)) => types.push(one.as_str()),
        Some(Value::Array(many)) => types.extend(many.iter().filter_map(Value::as_str)),
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        for member in property
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            types.extend(allowed(member));
        }
    }
    let values = property
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .chain(property.get("const"));
    for value in values {
        types.push(type_of(value));
    }
    types
}

/// The JSON type of `value`, as a schema names it (a whole number is an `integer`).
fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `text` as the value of a property whose schema is `property` (`None`: no schema says).
pub(crate) fn read(property: Option<&Value>, text: &str) -> Value {
    let types = property.map(allowed).unwrap_or_default();
    let parsed: Option<Value> = serde_json::from_str(text).ok();
    if types.is_empty() {
        return parsed.unwrap_or_else(|| Value::from(text));
    }
    let fits = |value: &Value| {
        let kind = type_of(value);
        types.contains(&kind) || (kind == "integer" && types.contains(&"number"))
    };
    match parsed {
        Some(value) if fits(&value) => value,
        _ if types.contains(&"string") => Value::from(text),
        // Not of a type the schema allows either way: as JSON if it is JSON, and the schema
        // check says what is wrong.
        Some(value) => value,
        None => Value::from(text),
    }
}

/// The schema of property `key` of an input schema, if it names one.
pub(crate) fn property<'a>(schema: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    schema?.get("properties")?.get(key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_value_is_read_as_its_property_s_type() {
        let of = |schema: Value, text: &str| read(Some(&schema), text);
        assert_eq!(of(json!({"type": "string"}), "42"), json!("42"));
        assert_eq!(of(json!({"type": "string"}), "true"), json!("true"));
        assert_eq!(
            of(json!({"type": "string"}), r#"{"a":1}"#),
            json!(r#"{"a":1}"#)
        );
        // A JSON string is the string it says.
        assert_eq!(of(json!({"type": "string"}), r#""hi""#), json!("hi"));
        assert_eq!(of(json!({"type": "number"}), "42"), json!(42));
        assert_eq!(of(json!({"type": "number"}), "4.5"), json!(4.5));
        assert_eq!(of(json!({"type": "integer"}), "42"), json!(42));
        assert_eq!(of(json!({"type": "boolean"}), "false"), json!(false));
        assert_eq!(of(json!({"type": "array"}), "[1,2]"), json!([1, 2]));
        assert_eq!(of(json!({"type": "object"}), r#"{"a":1}"#), json!({"a": 1}));
        // Unions: what fits, else the string when a string is allowed.
        assert_eq!(of(json!({"type": ["string", "null"]}), "42"), json!("42"));
        assert_eq!(of(json!({"type": ["string", "null"]}), "null"), Value::Null);
        assert_eq!(of(json!({"type": ["number", "string"]}), "42"), json!(42));
        assert_eq!(of(json!({"type": ["number", "string"]}), "x"), json!("x"));
        let any_of = json!({"anyOf": [{"type": "integer"}, {"type": "string"}]});
        assert_eq!(of(any_of.clone(), "7"), json!(7));
        assert_eq!(of(any_of, "seven"), json!("seven"));
        assert_eq!(of(json!({"enum": ["1", "2"]}), "1"), json!("1"));
        assert_eq!(of(json!({"enum": [1, 2]}), "1"), json!(1));
        // Neither fits: JSON when it is JSON (the schema check refuses it), else the text.
        assert_eq!(of(json!({"type": "number"}), "many"), json!("many"));
        assert_eq!(of(json!({"type": "integer"}), "true"), json!(true));
        // No schema to ask: JSON first, then a string, as always.
        assert_eq!(read(None, "42"), json!(42));
        assert_eq!(read(None, "hi"), json!("hi"));
        assert_eq!(of(json!({"description": "no type"}), "42"), json!(42));
    }

    #[test]
    fn a_property_is_found_in_the_input_schema() {
        let schema = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        assert_eq!(
            property(Some(&schema), "a"),
            Some(&json!({"type": "string"}))
        );
        assert_eq!(property(Some(&schema), "b"), None);
        assert_eq!(property(None, "a"), None);
    }
}
