// kx-macrostack: inclusive bytes, calls and expansion stacks per macro,
// from clang's own record of nested macro expansions.
//
//   kx-macrostack [-n TOP] [-l FILE:LINE [-f FOLDED]]... -- clang <flags> file.c
//
// Lexes the translation unit as the file's clang command would preprocess
// it (clang's own driver parses the flags). Each token is charged to the
// chain of expansions that produced it (Walker::chain): a macro's inclusive
// bytes are those of every token made inside one of its expansions, nested
// macros and arguments included, counted once where it recurses. A token's
// bytes: its length plus one for a leading space, close to -E (+0.06% on
// setup.c's 47 MB line at laight-v4). Which SourceManager entries are macro
// calls comes from PPCallbacks::MacroExpands (pastes and stringifications
// make entries of their own); chains are memoized per entry.
// For each -l FILE:LINE (leading "./", "../" ignored): the same for tokens
// whose outermost expansion is on that line, and with -f its stacks in
// flamegraph.pl's folded format ("FILE:LINE;outer;...;inner bytes").
// Writes one JSON object to stdout.
#include "clang/Basic/Diagnostic.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Frontend/CompilerInstance.h"
#include "clang/Frontend/CompilerInvocation.h"
#include "clang/Frontend/FrontendActions.h"
#include "clang/Frontend/TextDiagnosticPrinter.h"
#include "clang/Frontend/Utils.h"
#include "clang/Lex/PPCallbacks.h"
#include "clang/Lex/Preprocessor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "kx-json.h"
#include "kx-stacks.h"

using namespace clang;

namespace {

struct Selection {
	std::string file, folded;
	unsigned line;
	std::unordered_map<int, unsigned long long> self;   // trie node -> bytes
	unsigned long long bytes = 0;
	std::vector<unsigned long long> calls;
	std::vector<std::string> def_at;      // the definition used on this line
};

std::vector<std::string> names;
std::unordered_map<std::string, int> name_id;
std::vector<unsigned long long> calls;
std::vector<std::string> def_at;      // where each name's #define was (file:line)
std::unordered_map<unsigned, int> expansion_name;   // raw loc of the call's name -> name
std::vector<Selection> sels;

// "./../include/x.h" and "include/x.h" name the same file for -l
std::string norm(std::string p)
{
	for (;;) {
		if (p.rfind("./", 0) == 0 || p.rfind("../", 0) == 0)
			p = p.substr(p[1] == '/' ? 2 : 3);
		else
			return p;
	}
}

int intern(llvm::StringRef s)
{
	auto it = name_id.find(s.str());
	if (it != name_id.end())
		return it->second;
	names.push_back(s.str());
	calls.push_back(0);
	def_at.push_back("");
	for (auto &sel : sels) {
		sel.calls.push_back(0);
		sel.def_at.push_back("");
	}
	return name_id[s.str()] = (int)names.size() - 1;
}

class Calls : public PPCallbacks {
	SourceManager &SM;
	// where the definition used by an expansion is (a name may be
	// #undef'd and defined again)
	std::string where(const MacroDefinition &md)
	{
		if (!md.getMacroInfo())
			return "";
		PresumedLoc d = SM.getPresumedLoc(md.getMacroInfo()->getDefinitionLoc());
		return d.isValid() ? norm(d.getFilename()) + ":" + std::to_string(d.getLine())
				   : "<built-in>";
	}
public:
	explicit Calls(SourceManager &sm) : SM(sm) {}
	void MacroExpands(const Token &name, const MacroDefinition &md, SourceRange,
			  const MacroArgs *) override
	{
		IdentifierInfo *ii = name.getIdentifierInfo();
		if (!ii)
			return;
		int id = intern(ii->getName());
		calls[id]++;
		if (def_at[id].empty())
			def_at[id] = where(md);
		expansion_name[name.getLocation().getRawEncoding()] = id;
		if (!sels.empty()) {
			PresumedLoc p = SM.getPresumedLoc(SM.getExpansionLoc(name.getLocation()));
			if (p.isValid())
				for (auto &s : sels)
					if (s.line == p.getLine() && s.file == norm(p.getFilename())) {
						s.calls[id]++;
						s.def_at[id] = where(md);
					}
		}
	}
};

struct Memo {
	int node = 0;           // the trie node of its stack
	int ctx = 0;            // depth of the stack its call was written in
	SourceLocation top;     // the outermost call's location in a file
	bool known = false;     // (in Walker::memo: worked out)
};

class Walker {
	Preprocessor &PP;
	SourceManager &SM;
	std::vector<Memo> memo;        // expansion FileID -> chain (a local ID indexes it)
	std::unordered_map<unsigned, Memo> far;    // any other ID
	const char *last_fn = nullptr;
	std::string last_norm;
public:
	unsigned long long total = 0;
	Walker(Preprocessor &pp) : PP(pp), SM(pp.getSourceManager()) {}

	// The stack of an SLocEntry. A macro body's: the stack its call was
	// written in, plus the macro. A substituted argument's: the stack of
	// the body it went into (P, a parameter's place there), plus the
	// macros that made the argument's tokens before substitution (the
	// spelling side, S), less the frames S shares with the call's context.
	Memo chain(FileID fid)
	{
		unsigned id = fid.getHashValue();
		bool local = id < (1u << 28);
		if (local && id < memo.size() && memo[id].known)
			return memo[id];
		auto f = local ? far.end() : far.find(id);
		if (f != far.end())
			return f->second;
		const SrcMgr::ExpansionInfo &e = SM.getSLocEntry(fid).getExpansion();
		SourceLocation up = e.getExpansionLocStart();
		Memo m;
		if (up.isMacroID())
			m = chain(SM.getFileID(up));
		else
			m.top = up;
		if (e.isMacroArgExpansion()) {
			SourceLocation sp = e.getSpellingLoc();
			if (sp.isMacroID())
				m.node = graft(m.node, chain(SM.getFileID(sp)).node, m.ctx);
		} else {
			m.ctx = nodes[m.node].depth;
			auto n = expansion_name.find(up.getRawEncoding());
			if (n != expansion_name.end())
				m.node = child(m.node, n->second);
		}
		m.known = true;
		if (!local)
			return far[id] = m;
		if (id >= memo.size())
			memo.resize(id * 2 + 1024);
		return memo[id] = m;
	}

	void token(const Token &t)
	{
		unsigned long long b = t.getLength() + (t.hasLeadingSpace() ? 1 : 0);
		total += b;
		SourceLocation loc = t.getLocation();
		Memo m;
		m.top = loc;
		if (loc.isMacroID())
			m = chain(SM.getFileID(loc));
		nodes[m.node].self += b;
		if (sels.empty())
			return;
		PresumedLoc p = SM.getPresumedLoc(m.top);
		if (!p.isValid())
			return;
		if (p.getFilename() != last_fn) {
			last_fn = p.getFilename();
			last_norm = norm(last_fn);
		}
		for (auto &s : sels) {
			if (s.line != p.getLine() || s.file != last_norm)
				continue;
			s.bytes += b;
			s.self[m.node] += b;
		}
	}
};

class Action : public PreprocessorFrontendAction {
protected:
	void ExecuteAction() override
	{
		Preprocessor &PP = getCompilerInstance().getPreprocessor();
		PP.addPPCallbacks(std::make_unique<Calls>(PP.getSourceManager()));
		Walker w(PP);
		PP.EnterMainSourceFile();
		Token t;
		for (;;) {
			PP.Lex(t);
			if (t.is(tok::eof))
				break;
			w.token(t);
		}
		total_ = w.total;
	}
public:
	unsigned long long total_ = 0;
};

int write_folded(const Selection &s)
{
	std::vector<std::string> out;
	for (auto &kv : s.self) {
		std::string line = s.file + ":" + std::to_string(s.line);
		for (int nm : path_of(kv.first))
			line += ";" + names[nm];
		out.push_back(line + " " + std::to_string(kv.second));
	}
	std::sort(out.begin(), out.end());
	FILE *fp = fopen(s.folded.c_str(), "w");
	if (!fp) {
		perror(s.folded.c_str());
		return 2;
	}
	for (auto &l : out)
		fprintf(fp, "%s\n", l.c_str());
	if (fclose(fp)) {
		perror(s.folded.c_str());
		return 2;
	}
	return 0;
}

/* any bytes as valid JSON (kx-json.h: not UTF-8 -> "\\udcXX") */
void json_str(const std::string &s)
{
	json_strn(s.data(), s.size());
}

void print_macros(const std::unordered_map<int, unsigned long long> &self,
		  const std::vector<unsigned long long> &ncalls,
		  const std::vector<std::string> &defs, long top)
{
	std::vector<unsigned long long> inc = inclusive(self, names.size());
	std::vector<int> order;
	for (size_t i = 0; i < names.size(); i++)
		if (inc[i] || ncalls[i])
			order.push_back((int)i);
	std::sort(order.begin(), order.end(), [&](int a, int b) {
		return inc[a] != inc[b] ? inc[a] > inc[b] : names[a] < names[b];
	});
	printf("\"n_macros\": %zu, \"macros\": [", order.size());
	for (size_t i = 0; i < order.size() && (long)i < top; i++) {
		printf("%s{\"name\": ", i ? ", " : "");
		json_str(names[order[i]]);
		printf(", \"at\": ");
		json_str(defs[order[i]]);
		printf(", \"inclusive_bytes\": %llu, \"calls\": %llu}", inc[order[i]],
		       ncalls[order[i]]);
	}
	printf("]");
}

void usage()
{
	fprintf(stderr, "usage: kx-macrostack [-n TOP] [-l FILE:LINE [-f FOLDED]]... "
		"-- clang <flags> file.c\n");
	exit(2);
}

} // namespace

int main(int argc, char **argv)
{
	long top = 20;
	int i = 1;
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			top = strtol(argv[++i], nullptr, 10);
		} else if (!strcmp(argv[i], "-l") && i + 1 < argc) {
			std::string a = argv[++i];
			size_t c = a.rfind(':');
			if (c == std::string::npos)
				usage();
			Selection s;
			s.file = norm(a.substr(0, c));
			s.line = (unsigned)strtoul(a.c_str() + c + 1, nullptr, 10);
			if (!s.line)
				usage();
			sels.push_back(s);
		} else if (!strcmp(argv[i], "-f") && i + 1 < argc && !sels.empty()) {
			sels.back().folded = argv[++i];
		} else {
			usage();
		}
	}
	if (i + 1 >= argc)
		usage();
	std::vector<const char *> args(argv + i + 1, argv + argc);

	nodes.emplace_back(-1, -1, 0);                 // outside any macro
	IntrusiveRefCntPtr<DiagnosticOptions> dopts = new DiagnosticOptions();
	auto *printer = new TextDiagnosticPrinter(llvm::errs(), &*dopts);
	IntrusiveRefCntPtr<DiagnosticsEngine> diags =
		CompilerInstance::createDiagnostics(&*dopts, printer, true);
	std::shared_ptr<CompilerInvocation> inv =
		createInvocationFromCommandLine(args, diags);
	if (!inv) {
		fprintf(stderr, "kx-macrostack: clang could not read the command line\n");
		return 2;
	}
	inv->getDependencyOutputOpts().OutputFile.clear();
	inv->getDependencyOutputOpts().Targets.clear();
	CompilerInstance ci;
	ci.setInvocation(inv);
	ci.createDiagnostics(printer, false);
	Action act;
	if (!ci.ExecuteAction(act) || ci.getDiagnostics().hasErrorOccurred()) {
		fprintf(stderr, "kx-macrostack: preprocessing failed\n");
		return 1;
	}
	printf("{\"bytes_est\": %llu, ", act.total_);
	std::unordered_map<int, unsigned long long> all;
	for (size_t n = 0; n < nodes.size(); n++)
		if (nodes[n].self)
			all[(int)n] = nodes[n].self;
	print_macros(all, calls, def_at, top);
	printf(", \"lines\": [");
	for (size_t k = 0; k < sels.size(); k++) {
		Selection &s = sels[k];
		printf("%s{\"file\": ", k ? ", " : "");
		json_str(s.file);
		printf(", \"line\": %u, \"bytes_est\": %llu, ", s.line, s.bytes);
		print_macros(s.self, s.calls, s.def_at, top);
		printf("}");
		if (!s.folded.empty() && write_folded(s))
			return 2;
	}
	printf("]}\n");
	return fflush(stdout) ? 2 : 0;
}
