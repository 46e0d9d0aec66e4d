"""A real third-party OAuth client against `conduit-mcp serve --oauth-issuer …`:
the official Python MCP SDK 1.x (`mcp.client.auth.OAuthClientProvider`).

    oauth_client.py URL ISSUER

The SDK meets the server's 401, reads its Protected Resource Metadata and the
authorization server's metadata, registers itself (dynamic client
registration), and runs authorization code + PKCE + `resource`; the "browser"
here follows the authorization server's redirects with its cookies (login and
consent are automatic at the test AS) up to the redirect URI, which is never
opened. Then it lists the tools and calls `echo`. Prints `ok` and exits 0, or
fails on any mismatch.
"""

import asyncio
import sys
import warnings
from urllib.parse import parse_qs, urlparse

import httpx
from mcp import ClientSession
from mcp.client.auth import OAuthClientProvider, TokenStorage
from mcp.client.streamable_http import streamablehttp_client
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

warnings.filterwarnings("ignore", category=DeprecationWarning)

# Registered with the AS, never opened: the browser stops at the redirect.
REDIRECT_URI = "http://127.0.0.1:9/callback"


class MemoryStorage(TokenStorage):
    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class HeadlessBrowser:
    """Opens the authorization URL the SDK hands over and returns (code, state)."""

    def __init__(self) -> None:
        self.url: str | None = None
        self.opened: list[str] = []

    async def redirect(self, authorization_url: str) -> None:
        self.url = authorization_url

    async def callback(self) -> tuple[str, str | None]:
        assert self.url, "the SDK asked for the callback before redirecting"
        url = httpx.URL(self.url)
        origin = (url.host, url.port)
        async with httpx.AsyncClient(follow_redirects=False) as browser:
            for _ in range(20):
                self.opened.append(str(url))
                r = await browser.get(url)
                assert r.is_redirect, f"{url} answered {r.status_code}: {r.text[:300]}"
                url = url.join(r.headers["location"])
                if (url.host, url.port) != origin:
                    break
            else:
                raise AssertionError("too many redirects at the authorization server")
        assert str(url).startswith(REDIRECT_URI), f"redirected to {url}"
        query = parse_qs(urlparse(str(url)).query)
        assert "error" not in query, f"authorization refused: {query}"
        return query["code"][0], query.get("state", [None])[0]


async def main(url: str, issuer: str) -> None:
    browser = HeadlessBrowser()
    provider = OAuthClientProvider(
        server_url=url,
        client_metadata=OAuthClientMetadata(
            client_name="python-sdk-oauth-test",
            redirect_uris=[REDIRECT_URI],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
        ),
        storage=MemoryStorage(),
        redirect_handler=browser.redirect,
        callback_handler=browser.callback,
    )
    async with streamablehttp_client(url, auth=provider) as (read, write, _):
        async with ClientSession(read, write) as session:
            await session.initialize()
            names = [t.name for t in (await session.list_tools()).tools]
            assert "echo" in names, names
            result = await session.call_tool("echo", {"text": "hi from python"})
            assert not result.isError, result
            assert result.content[0].text == "hi from python", result
    authorize = browser.opened[0]
    assert authorize.startswith(issuer + "/"), f"the SDK went to {authorize}, not the issuer {issuer}"
    query = parse_qs(urlparse(authorize).query)
    assert query.get("resource") == [url], f"resource sent: {query.get('resource')}"
    assert query.get("code_challenge_method") == ["S256"], query
    assert query.get("scope") == ["mcp:read"], f"scope from the challenge: {query.get('scope')}"
    print("ok")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
