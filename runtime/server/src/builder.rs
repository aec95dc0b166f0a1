//! A server of typed tools, resources and prompts, assembled from async functions:
//! [`Server::builder`].
//!
//! Each tool's `inputSchema` is its argument type's JSON Schema (see
//! [`typed`](crate::typed) for the functions it accepts), each prompt's `arguments` the
//! fields of its argument type; the lists are written once, when the server is built, and a
//! call finds its function by name. What cannot be served (two tools of one name, arguments
//! that are not an object, a prompt argument that takes no string) is an
//! [`Error::Definition`] from [`build`](ServerBuilder::build), never a panic.

use std::collections::HashMap;
use std::fmt;

use serde_json::{json, Value};

use crate::handler::Info;
use crate::router::{Router, Tool};
use crate::skills::{Skill, Skills};
use crate::typed::{sealed, PromptFn, ResourceFn, ToolFn};
use crate::{Error, Options, Server};

impl Server {
    /// A server of typed tools, resources and prompts, named `name` at `version`.
    ///
    /// ```
    /// use switchboard_server::{Server, ToolError};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Greet {
    ///     /// Whom to greet.
    ///     name: String,
    /// }
    ///
    /// async fn greet(Greet { name }: Greet) -> Result<String, ToolError> {
    ///     Ok(format!("Hello, {name}!"))
    /// }
    ///
    /// # fn main() -> Result<(), switchboard_server::Error> {
    /// let server = Server::builder("hello", "1.0.0")
    ///     .tool("greet", "Greets someone", greet)
    ///     .build()?;
    /// # let _ = server; Ok(()) }
    /// ```
    pub fn builder(name: impl Into<String>, version: impl Into<String>) -> ServerBuilder {
        ServerBuilder {
            info: Info::new(name, version),
            options: Options::default(),
            router: Router {
                info: Info::new("", ""),
                tool_list: Vec::new(),
                resource_list: Vec::new(),
                prompt_list: Vec::new(),
                tools: HashMap::new(),
                resources: HashMap::new(),
                prompts: HashMap::new(),
                skills: Skills::new(),
            },
            error: None,
        }
    }
}

/// Assembles a [`Server`] (or its [`Router`]) from typed tools, resources and prompts; made
/// by [`Server::builder`].
pub struct ServerBuilder {
    info: Info,
    options: Options,
    router: Router,
    /// The first entry that cannot be served, reported by `build`.
    error: Option<Error>,
}

impl fmt::Debug for ServerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ServerBuilder")
            .field("router", &self.router)
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl ServerBuilder {
    /// Sets `serverInfo.title`, a name for people.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.info.title = Some(title.into());
        self
    }

    /// Sets the instructions: how to use the server, for a model's context.
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.info.instructions = Some(instructions.into());
        self
    }

    /// Serves with `options` rather than the defaults.
    pub fn with_options(mut self, options: Options) -> Self {
        self.options = options;
        self
    }

    /// Adds tool `name`: `function` runs it, with its arguments read into the type it takes,
    /// whose JSON Schema is the tool's `inputSchema`.
    ///
    /// A name is 1 to 128 characters of ASCII letters, digits, `_`, `-` and `.`, as MCP
    /// recommends.
    pub fn tool<M, F: ToolFn<M>>(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        function: F,
    ) -> Self {
        let name = name.into();
        let schema =
            match tool_name_problem(&name).map_or_else(<F as sealed::Tool<M>>::input_schema, Err) {
                Ok(schema) => Value::Object(schema),
                Err(reason) => return self.refuse("tool", name, reason),
            };
        if self.router.tools.contains_key(&name) {
            return self.refuse("tool", name, "another tool has its name".into());
        }
        let entry = json!({"name": name, "description": description.into(), "inputSchema": schema});
        self.router.tool_list.push(entry);
        let call = Box::new(move |arguments: &_, ctx| {
            <F as sealed::Tool<M>>::call(&function, arguments, ctx)
        });
        let tool = Tool {
            call,
            input_schema: schema,
        };
        self.router.tools.insert(name, tool);
        self
    }

    /// Adds the resource at `uri`, called `name`: `function` reads its contents.
    pub fn resource<M, F: ResourceFn<M>>(
        mut self,
        uri: impl Into<String>,
        name: impl Into<String>,
        function: F,
    ) -> Self {
        let uri = uri.into();
        if let Some(reason) = uri_problem(&uri) {
            return self.refuse("resource", uri, reason);
        }
        if self.router.resources.contains_key(&uri) {
            return self.refuse("resource", uri, "another resource has its URI".into());
        }
        self.router
            .resource_list
            .push(json!({"uri": uri, "name": name.into()}));
        let read = Box::new(move |uri, ctx| <F as sealed::Resource<M>>::read(&function, uri, ctx));
        self.router.resources.insert(uri, read);
        self
    }

    /// Adds prompt `name`: `function` gets its messages, with its arguments read into the
    /// type it takes, whose fields (strings) are the prompt's arguments.
    pub fn prompt<M, F: PromptFn<M>>(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        function: F,
    ) -> Self {
        let name = name.into();
        let arguments = match name.is_empty() {
            true => Err("a prompt needs a name".to_owned()),
            false => <F as sealed::Prompt<M>>::arguments(),
        };
        let arguments = match arguments {
            Ok(arguments) => arguments,
            Err(reason) => return self.refuse("prompt", name, reason),
        };
        if self.router.prompts.contains_key(&name) {
            return self.refuse("prompt", name, "another prompt has its name".into());
        }
        self.router.prompt_list.push(json!({
            "name": name,
            "description": description.into(),
            "arguments": arguments,
        }));
        let get = Box::new(move |arguments, ctx| {
            <F as sealed::Prompt<M>>::get(&function, arguments, ctx)
        });
        self.router.prompts.insert(name, get);
        self
    }

    /// Adds a skill (the extension `io.modelcontextprotocol/skills`): the server then
    /// declares the extension, lists and gets its entry, and serves its files as
    /// resources, in both eras.
    ///
    /// ```
    /// use switchboard_server::{skills::Skill, Server};
    ///
    /// # fn main() -> Result<(), switchboard_server::Error> {
    /// let server = Server::builder("docs", "1.0.0")
    ///     .skill(Skill::new("release-notes", "Write release notes", "# Release notes\n…")?)
    ///     .build()?;
    /// # let _ = server; Ok(()) }
    /// ```
    pub fn skill(mut self, skill: Skill) -> Self {
        if let Err(error) = self.router.skills.add(skill) {
            self.error.get_or_insert(error);
        }
        self
    }

    /// Adds the skills of every folder below `folder` that holds a `SKILL.md` (see
    /// [`Skills::from_dir`]): read now, once; a malformed one fails
    /// [`build`](Self::build), naming its file.
    pub fn skills_dir(mut self, folder: impl AsRef<std::path::Path>) -> Self {
        if let Err(error) = self.router.skills.add_dir(folder) {
            self.error.get_or_insert(error);
        }
        self
    }

    fn refuse(mut self, kind: &'static str, name: String, reason: String) -> Self {
        self.error
            .get_or_insert(Error::Definition { kind, name, reason });
        self
    }

    /// The handler of what was added, with the server's [`Info`] (resources, prompts and
    /// skills declared if there are any).
    ///
    /// # Errors
    /// [`Error::Definition`] for the first tool, resource or prompt that cannot be served.
    pub fn into_router(self) -> Result<Router, Error> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let mut router = self.router;
        let mut info = self.info;
        if !router.resource_list.is_empty() {
            info = info.with_resources();
        }
        if !router.prompt_list.is_empty() {
            info = info.with_prompts();
        }
        if !router.skills.is_empty() {
            // The catalogue answers directory reads of every folder of its skills.
            info = info.with_skills(true);
            let files = router.skills.resources().to_vec();
            router.resource_list.extend(files);
        }
        router.info = info;
        Ok(router)
    }

    /// The server, ready to serve.
    ///
    /// # Errors
    /// [`Error::Definition`] for the first tool, resource or prompt that cannot be served.
    pub fn build(self) -> Result<Server, Error> {
        let options = self.options.clone();
        Ok(Server::with_options(self.into_router()?, options))
    }
}

/// Why `name` is not a tool name MCP recommends (2025-11-25), if it is not.
fn tool_name_problem(name: &str) -> Option<String> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
    if name.is_empty() || name.len() > 128 {
        return Some("a tool name has 1 to 128 characters".into());
    }
    let refused = name.chars().find(|&c| !allowed(c))?;
    Some(format!(
        "{refused:?} is not in a tool name (ASCII letters, digits, '_', '-' and '.')"
    ))
}

/// Why `uri` is not a URI (a scheme, then `:`), if it is not.
fn uri_problem(uri: &str) -> Option<String> {
    let scheme = uri.split_once(':').map(|(scheme, _)| scheme);
    let valid = scheme.is_some_and(|scheme| {
        scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
    });
    (!valid).then(|| "a resource's URI starts with a scheme and ':'".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_names_are_what_mcp_recommends() {
        for good in ["add", "a.b-c_D9", &"x".repeat(128)] {
            assert_eq!(tool_name_problem(good), None, "{good}");
        }
        for bad in ["", "two words", "é", "a/b", &"x".repeat(129)] {
            assert!(tool_name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn a_uri_starts_with_a_scheme() {
        for good in ["file:///a", "calc://about", "urn:x", "a+b-c.d:e"] {
            assert_eq!(uri_problem(good), None, "{good}");
        }
        for bad in ["", "about", "://x", "1a:b", "a b:c"] {
            assert!(uri_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn what_cannot_be_served_fails_the_build_naming_it() {
        let ok = || async { Ok("x") };
        let built = Server::builder("s", "1")
            .tool("a", "first", ok)
            .tool("a", "again", ok)
            .tool("b c", "second error, not reported", ok)
            .into_router();
        let Err(Error::Definition { kind, name, reason }) = built else {
            panic!("{built:?}");
        };
        assert_eq!((kind, name.as_str()), ("tool", "a"));
        assert!(reason.contains("another tool"), "{reason}");

        let built = Server::builder("s", "1")
            .tool("s", "takes a string", |_: String| async { Ok("x") })
            .into_router();
        let message = built.unwrap_err().to_string();
        assert!(
            message.starts_with(r#"tool "s" cannot be served: "#),
            "{message}"
        );

        let built = Server::builder("s", "1")
            .resource("about", "about", ok)
            .into_router();
        assert!(matches!(
            built,
            Err(Error::Definition {
                kind: "resource",
                ..
            })
        ));
    }

    #[test]
    fn a_function_of_the_context_alone_takes_no_arguments() {
        use crate::Context;
        let router = Server::builder("s", "1")
            .tool("era", "", |ctx: Context| async move {
                Ok(ctx.protocol_version().to_owned())
            })
            .resource("s://era", "era", |ctx: Context| async move {
                Ok(format!("{:?}", ctx.era()))
            })
            .prompt("era", "", |ctx: Context| async move {
                Ok(ctx.protocol_version().to_owned())
            })
            .into_router()
            .unwrap();
        assert_eq!(
            router.tool_list[0]["inputSchema"],
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(router.prompt_list[0]["arguments"], json!([]));
    }

    #[test]
    fn resources_and_prompts_are_declared_when_there_are_some() {
        let tools_only = Server::builder("s", "1")
            .tool("t", "", || async { Ok("x") })
            .into_router()
            .unwrap();
        assert!(!tools_only.info.resources && !tools_only.info.prompts);
        let all = Server::builder("s", "1")
            .resource("s://r", "r", || async { Ok("x") })
            .prompt("p", "", || async { Ok("x") })
            .into_router()
            .unwrap();
        assert!(all.info.resources && all.info.prompts);
    }
}
