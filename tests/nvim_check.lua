-- A check of `gradlint lsp` with a real editor client: headless Neovim (0.7 or later).
--
--   GRADLINT_FIXTURE=path/to/train.py GRADLINT_PYTHON=python3 \
--     nvim --headless --clean -c "luafile tests/nvim_check.lua"
--
-- Opens the fixture, starts the server, waits for a GL101 diagnostic, asks for the code
-- actions on it, applies the first one (the quick fix), waits for the re-lint and prints
-- what happened. Exits 0 when the GL101 is gone after the fix, 1 otherwise.

local fixture = assert(os.getenv("GRADLINT_FIXTURE"), "set GRADLINT_FIXTURE")
local python = os.getenv("GRADLINT_PYTHON") or "python3"
local timeout = 30000

local function say(text)
  io.stdout:write(text .. "\n")
end

local function finish(status)
  io.stdout:flush()
  vim.cmd((status == 0) and "qall!" or "cquit! " .. status)
end

local function gl101(bufnr)
  return vim.tbl_filter(function(d) return d.code == "GL101" end, vim.diagnostic.get(bufnr))
end

vim.cmd("edit " .. vim.fn.fnameescape(fixture))
local bufnr = vim.api.nvim_get_current_buf()
local client_id = vim.lsp.start_client({
  name = "gradlint",
  cmd = { python, "-m", "gradlint", "lsp" },
  root_dir = vim.fn.fnamemodify(fixture, ":p:h"),
})
vim.lsp.buf_attach_client(bufnr, client_id)
say("neovim " .. tostring(vim.version().major) .. "." .. tostring(vim.version().minor) .. "." .. tostring(vim.version().patch))

if not vim.wait(timeout, function() return #gl101(bufnr) > 0 end, 50) then
  say("FAIL: no GL101 diagnostic within " .. timeout .. " ms")
  return finish(1)
end
for _, d in ipairs(vim.diagnostic.get(bufnr)) do
  say(string.format("diagnostic %s:%d:%d: %s %s", vim.fn.fnamemodify(fixture, ":t"), d.lnum + 1, d.col + 1, d.code, d.message))
end

local target = gl101(bufnr)[1]
local params = {
  textDocument = { uri = vim.uri_from_bufnr(bufnr) },
  range = {
    start = { line = target.lnum, character = target.col },
    ["end"] = { line = target.end_lnum, character = target.end_col },
  },
  context = { diagnostics = vim.lsp.diagnostic.get_line_diagnostics(bufnr, target.lnum) },
}
local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", params, timeout) or {}
local actions = {}
for _, response in pairs(responses) do
  for _, action in ipairs(response.result or {}) do
    table.insert(actions, action)
  end
end
for i, action in ipairs(actions) do
  say(string.format("code action %d: [%s] %s", i, action.kind or "", action.title))
end
local first = actions[1]
if first == nil or first.edit == nil then
  say("FAIL: no code action with an edit")
  return finish(1)
end

local client = vim.lsp.get_client_by_id(client_id)
vim.lsp.util.apply_workspace_edit(first.edit, client.offset_encoding)
say("applied: " .. first.title)

if not vim.wait(timeout, function() return #gl101(bufnr) == 0 end, 50) then
  say("FAIL: the GL101 is still reported after the fix")
  return finish(1)
end
say("GL101 diagnostics after the fix: 0")
say("lines " .. (target.lnum - 1) .. "-" .. (target.lnum + 8) .. " after the fix:")
for number, line in ipairs(vim.api.nvim_buf_get_lines(bufnr, target.lnum - 2, target.lnum + 8, false)) do
  say(string.format("%4d | %s", target.lnum - 2 + number, line))
end
vim.lsp.stop_client(client_id)
finish(0)
