//! Resources: fixed URIs and URI templates the client can read.

use crate::ctx::Ctx;
use crate::mrtr::InputRequired;
use crate::protocol::RpcError;
use crate::protocol::content::ResourceContents;
use crate::protocol::resources::{ResourceInfo, ResourceTemplateInfo};
use futures_util::future::BoxFuture;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

/// What a resource read returns.
#[derive(Debug)]
#[non_exhaustive]
pub enum ResourceOutput {
    /// The contents (at least one entry).
    Complete(Vec<ResourceContents>),
    /// Input is needed first (MRTR).
    InputRequired(InputRequired),
}

impl From<Vec<ResourceContents>> for ResourceOutput {
    fn from(c: Vec<ResourceContents>) -> Self {
        Self::Complete(c)
    }
}

impl From<ResourceContents> for ResourceOutput {
    fn from(c: ResourceContents) -> Self {
        Self::Complete(vec![c])
    }
}

impl From<InputRequired> for ResourceOutput {
    fn from(r: InputRequired) -> Self {
        Self::InputRequired(r)
    }
}

/// Variables matched from a URI template.
pub type UriVars = BTreeMap<String, String>;

type Reader = Arc<dyn Fn(Ctx, String, UriVars) -> BoxFuture<'static, Result<ResourceOutput, RpcError>> + Send + Sync>;

fn boxed<F, Fut, O>(f: F) -> Reader
where
    F: Fn(Ctx, String, UriVars) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<O, RpcError>> + Send + 'static,
    O: Into<ResourceOutput>,
{
    Arc::new(move |ctx, uri, vars| {
        let fut = f(ctx, uri, vars);
        Box::pin(async move { fut.await.map(Into::into) })
    })
}

/// A resource at a fixed URI.
#[derive(Clone)]
#[must_use]
pub struct Resource {
    info: ResourceInfo,
    reader: Reader,
}

impl std::fmt::Debug for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resource").field("uri", &self.info.uri).finish_non_exhaustive()
    }
}

impl Resource {
    /// A resource with a URI and a display name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            info: ResourceInfo { uri: uri.into(), name: name.into(), description: None, mime_type: None },
            reader: boxed(|_, _, _| async { Err::<ResourceOutput, _>(RpcError::internal("resource has no reader")) }),
        }
    }

    /// Sets the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.info.description = Some(d.into());
        self
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, m: impl Into<String>) -> Self {
        self.info.mime_type = Some(m.into());
        self
    }

    /// Sets the reader, called with the URI.
    pub fn read<F, Fut, O>(mut self, f: F) -> Self
    where
        F: Fn(Ctx, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, RpcError>> + Send + 'static,
        O: Into<ResourceOutput>,
    {
        self.reader = boxed(move |ctx, uri, _| f(ctx, uri));
        self
    }

    /// How it is listed.
    pub fn info(&self) -> &ResourceInfo {
        &self.info
    }

    pub(crate) async fn read_now(&self, ctx: Ctx, uri: String) -> Result<ResourceOutput, RpcError> {
        (self.reader)(ctx, uri, UriVars::new()).await
    }
}

/// Resources addressed by an RFC 6570 level-1 template such as `files://{path}`.
#[derive(Clone)]
#[must_use]
pub struct ResourceTemplate {
    info: ResourceTemplateInfo,
    reader: Reader,
}

impl std::fmt::Debug for ResourceTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceTemplate").field("uri_template", &self.info.uri_template).finish_non_exhaustive()
    }
}

impl ResourceTemplate {
    /// A template and a display name.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        Self {
            info: ResourceTemplateInfo {
                uri_template: uri_template.into(),
                name: name.into(),
                description: None,
                mime_type: None,
            },
            reader: boxed(|_, _, _| async { Err::<ResourceOutput, _>(RpcError::internal("template has no reader")) }),
        }
    }

    /// Sets the description.
    pub fn description(mut self, d: impl Into<String>) -> Self {
        self.info.description = Some(d.into());
        self
    }

    /// Sets the MIME type.
    pub fn mime_type(mut self, m: impl Into<String>) -> Self {
        self.info.mime_type = Some(m.into());
        self
    }

    /// Sets the reader, called with the URI and the matched variables.
    /// Return `Ok(None)`-like "not found" by returning `Err(RpcError)` from
    /// [`crate::server::resource_not_found`].
    pub fn read<F, Fut, O>(mut self, f: F) -> Self
    where
        F: Fn(Ctx, String, UriVars) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<O, RpcError>> + Send + 'static,
        O: Into<ResourceOutput>,
    {
        self.reader = boxed(f);
        self
    }

    /// How it is listed.
    pub fn info(&self) -> &ResourceTemplateInfo {
        &self.info
    }

    /// Matches `uri` against the template; variables never span a `/`.
    pub fn matches(&self, uri: &str) -> Option<UriVars> {
        match_template(&self.info.uri_template, uri)
    }

    pub(crate) async fn read_now(&self, ctx: Ctx, uri: String, vars: UriVars) -> Result<ResourceOutput, RpcError> {
        (self.reader)(ctx, uri, vars).await
    }
}

fn match_template(template: &str, uri: &str) -> Option<UriVars> {
    let mut vars = UriVars::new();
    let mut rest = uri;
    let mut t = template;
    while !t.is_empty() {
        if let Some(after) = t.strip_prefix('{') {
            let end = after.find('}')?;
            let name = &after[..end];
            t = &after[end + 1..];
            let literal_end = t.find('{').unwrap_or(t.len());
            let next_lit = &t[..literal_end];
            let value_end =
                if next_lit.is_empty() { rest.find('/').unwrap_or(rest.len()) } else { rest.find(next_lit)? };
            let value = &rest[..value_end];
            if value.is_empty() || value.contains('/') {
                return None;
            }
            vars.insert(name.to_owned(), value.to_owned());
            rest = &rest[value_end..];
        } else {
            let lit_end = t.find('{').unwrap_or(t.len());
            rest = rest.strip_prefix(&t[..lit_end])?;
            t = &t[lit_end..];
        }
    }
    rest.is_empty().then_some(vars)
}

#[cfg(test)]
mod tests {
    use super::match_template;

    #[test]
    fn matches_level_one_templates() {
        let v = match_template("test://template/{id}/data", "test://template/123/data").unwrap();
        assert_eq!(v["id"], "123");
        assert!(match_template("test://template/{id}/data", "test://template/1/2/data").is_none());
        assert!(match_template("test://template/{id}/data", "test://template//data").is_none());
        assert!(match_template("a://{x}", "b://y").is_none());
        assert_eq!(match_template("a://{x}.{y}", "a://p.q").unwrap()["y"], "q");
    }
}
