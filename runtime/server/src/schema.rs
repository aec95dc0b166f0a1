//! A typed tool's `inputSchema` and a typed prompt's `arguments`, derived from the Rust type
//! that takes them (`schemars`), and read back when it deserializes what a client sent.
//!
//! Schemas are JSON Schema 2020-12, the default dialect MCP names, with no `$schema` key (a
//! client that does not know the 2020-12 meta-schema by its URI fails on it, and without it
//! 2020-12 is assumed) and their subschemas inlined: a client that resolves no `$ref` reads
//! them whole, and only a recursive type keeps `$defs`, at the root its `$ref`s point into.
//! The root is always an object schema, as a tool's arguments are an object.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{json, Map, Value};

/// The input schema of a tool that takes no arguments: any object, as a struct ignores the
/// fields it does not know.
pub(crate) fn no_arguments() -> Value {
    json!({"type": "object", "properties": {}})
}

/// `T`'s schema as a tool's or a prompt's arguments: an object schema, or why it is not one.
pub(crate) fn arguments_of<T: JsonSchema>() -> Result<Map<String, Value>, String> {
    let settings = SchemaSettings::draft2020_12().with(|settings| {
        settings.meta_schema = None;
        settings.inline_subschemas = true;
    });
    let schema = settings.into_generator().into_root_schema_for::<T>();
    object_schema(schema.to_value())
}

/// `schema` as the schema of an object, its root `title` (the Rust type's name) left out.
fn object_schema(schema: Value) -> Result<Map<String, Value>, String> {
    let Value::Object(mut schema) = schema else {
        return Err(format!(
            "its arguments' schema is {schema}, not an object schema (a struct has one)"
        ));
    };
    schema.remove("title");
    match schema.get("type") {
        Some(Value::String(kind)) if kind == "object" => return Ok(schema),
        Some(other) => {
            return Err(format!(
                "its arguments are of type {other}, not an object (a struct is one)"
            ))
        }
        None => {}
    }
    // An enum of structs (internally or externally tagged) is one of some objects: the
    // root says so for clients that look at `type` alone.
    let branches = ["oneOf", "anyOf"]
        .iter()
        .find_map(|key| schema.get(*key).and_then(Value::as_array));
    let all_objects = branches.is_some_and(|branches| {
        !branches.is_empty() && branches.iter().all(|b| b["type"] == "object")
    });
    if !all_objects {
        return Err("its arguments' schema is not an object schema (a struct has one)".into());
    }
    let mut typed = Map::with_capacity(schema.len() + 1);
    typed.insert("type".into(), json!("object"));
    typed.extend(schema);
    Ok(typed)
}

/// A prompt's `arguments`, one for each property of its object schema: its name, its
/// description (the field's doc comment) and whether it is required. Prompt arguments are
/// strings, so a field that takes no string is refused.
pub(crate) fn prompt_arguments(schema: &Map<String, Value>) -> Result<Vec<Value>, String> {
    let empty = Map::new();
    let properties = schema
        .get("properties")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let required = |name: &str| {
        schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|required| required.iter().any(|r| r == name))
    };
    properties
        .iter()
        .map(|(name, property)| {
            if !takes_a_string(property, schema, 0) {
                return Err(format!(
                    "its argument {name:?} takes no string (prompt arguments are strings)"
                ));
            }
            let mut argument = json!({"name": name, "required": required(name)});
            if let Some(description) = property.get("description") {
                argument["description"] = description.clone();
            }
            Ok(argument)
        })
        .collect()
}

/// Whether `schema` admits some string, `$ref`s resolved against `root`.
fn takes_a_string(schema: &Value, root: &Map<String, Value>, depth: usize) -> bool {
    // A recursive type refers to itself: a string is found within a few levels or never.
    if depth > 16 {
        return false;
    }
    let Value::Object(schema) = schema else {
        // `true` admits anything; `false` nothing.
        return schema == &Value::Bool(true);
    };
    let typed = match schema.get("type") {
        Some(Value::String(kind)) => kind == "string",
        Some(Value::Array(kinds)) => kinds.iter().any(|kind| kind == "string"),
        Some(_) => false,
        None => true,
    };
    if !typed {
        return false;
    }
    if let Some(Value::Array(values)) = schema.get("enum") {
        return values.iter().any(Value::is_string);
    }
    if let Some(value) = schema.get("const") {
        return value.is_string();
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = schema.get(key) {
            return branches
                .iter()
                .any(|branch| takes_a_string(branch, root, depth + 1));
        }
    }
    if let Some(Value::String(pointer)) = schema.get("$ref") {
        let target = pointer
            .strip_prefix('#')
            .and_then(|pointer| Value::Object(root.clone()).pointer(pointer).cloned());
        return target.is_some_and(|target| takes_a_string(&target, root, depth + 1));
    }
    // A string, or a schema that says nothing against one.
    true
}

/// Why arguments did not deserialize into a type: the path of the field, then what was
/// wrong with it, with no position in the request's text.
pub(crate) fn describe(error: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let inner = error.inner();
    let mut message = inner.to_string();
    if inner.line() > 0 {
        let position = format!(" at line {} column {}", inner.line(), inner.column());
        if let Some(stripped) = message.strip_suffix(&position) {
            message.truncate(stripped.len());
        }
    }
    match error.path().to_string().as_str() {
        "." => message,
        path => format!("{path}: {message}"),
    }
}

/// Reads `value` (an object of a prompt's arguments) into `T`.
pub(crate) fn from_value<T: DeserializeOwned>(value: Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| describe(&e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(JsonSchema, serde::Deserialize, Debug)]
    #[allow(dead_code)]
    struct Point {
        /// Across.
        x: i64,
        y: Option<i64>,
    }

    #[test]
    fn a_struct_is_an_object_without_its_title_or_dialect() {
        let schema = arguments_of::<Point>().unwrap();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["required"], json!(["x"]));
        assert_eq!(schema["properties"]["x"]["description"], "Across.");
        assert!(!schema.contains_key("title"), "{schema:?}");
        assert!(!schema.contains_key("$schema"), "{schema:?}");
    }

    #[test]
    fn what_is_not_an_object_is_refused() {
        assert!(arguments_of::<String>().is_err());
        assert!(arguments_of::<Vec<Point>>().is_err());
        assert!(arguments_of::<()>().is_err());
        assert!(arguments_of::<Value>().is_err());
        assert!(arguments_of::<std::collections::HashMap<String, i64>>().is_ok());
    }

    /// A type that holds itself.
    #[derive(JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct Tree {
        label: String,
        children: Vec<Tree>,
    }

    #[test]
    fn a_recursive_type_keeps_its_defs_at_the_root_its_refs_point_into() {
        let schema = Value::Object(arguments_of::<Tree>().unwrap());
        assert_eq!(schema["type"], "object");
        let reference = &schema["properties"]["children"]["items"]["$ref"];
        let pointer = reference.as_str().and_then(|r| r.strip_prefix('#'));
        let target = pointer.and_then(|p| schema.pointer(p));
        assert_eq!(
            target.map(|t| &t["type"]),
            Some(&json!("object")),
            "{schema}"
        );
    }

    #[derive(JsonSchema, serde::Deserialize)]
    #[serde(tag = "kind")]
    #[allow(dead_code)]
    enum Shape {
        Circle { r: f64 },
        Square { side: f64 },
    }

    #[test]
    fn an_enum_of_structs_is_an_object_that_is_one_of_them() {
        let schema = arguments_of::<Shape>().unwrap();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["oneOf"].as_array().map(Vec::len), Some(2));
    }

    #[derive(JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    enum Tone {
        Warm,
        Dry,
    }

    #[derive(JsonSchema, serde::Deserialize)]
    #[allow(dead_code)]
    struct Letter {
        /// To whom.
        to: String,
        tone: Option<Tone>,
        pages: u32,
    }

    #[test]
    fn prompt_arguments_are_the_fields_and_strings_only() {
        #[derive(JsonSchema, serde::Deserialize)]
        #[allow(dead_code)]
        struct Note {
            /// To whom.
            to: String,
            tone: Option<Tone>,
        }
        let schema = arguments_of::<Note>().unwrap();
        let arguments = prompt_arguments(&schema).unwrap();
        assert_eq!(
            arguments,
            vec![
                json!({"name": "to", "description": "To whom.", "required": true}),
                json!({"name": "tone", "required": false}),
            ]
        );
        let refused = prompt_arguments(&arguments_of::<Letter>().unwrap()).unwrap_err();
        assert!(refused.contains("\"pages\""), "{refused}");
    }

    #[test]
    fn a_failed_read_names_the_field_and_no_position() {
        #[derive(serde::Deserialize, Debug)]
        #[allow(dead_code)]
        struct Outer {
            inner: Vec<Point>,
        }
        let mut de = serde_json::Deserializer::from_str(r#"{"inner":[{"x":1},{"x":"two"}]}"#);
        let error = serde_path_to_error::deserialize::<_, Outer>(&mut de).unwrap_err();
        assert_eq!(
            describe(&error),
            r#"inner[1].x: invalid type: string "two", expected i64"#
        );
        let mut de = serde_json::Deserializer::from_str(r#"{"y":1}"#);
        let error = serde_path_to_error::deserialize::<_, Point>(&mut de).unwrap_err();
        assert_eq!(describe(&error), "missing field `x`");
    }
}
