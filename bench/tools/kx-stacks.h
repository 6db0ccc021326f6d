// kx-stacks.h: kx-macrostack's trie of expansion stacks. A node is one
// distinct stack (the names of its macros, outermost first, the root none);
// a token's bytes go to its stack's node (`self`). For kx-macrostack.cpp
// alone (an anonymous namespace: one translation unit).
#ifndef KX_STACKS_H
#define KX_STACKS_H

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <vector>

namespace {

struct Node {                 // one distinct expansion stack (a trie)
	int parent, name, depth;      // name: index into names, -1 for the root
	unsigned long long self = 0;
	std::unordered_map<int, int> kids;
	Node(int p, int n, int d) : parent(p), name(n), depth(d) {}
};

std::vector<Node> nodes;

int child(int parent, int name)
{
	auto it = nodes[parent].kids.find(name);
	if (it != nodes[parent].kids.end())
		return it->second;
	nodes.emplace_back(parent, name, nodes[parent].depth + 1);
	int id = (int)nodes.size() - 1;
	nodes[parent].kids[name] = id;
	return id;
}

// names on the stack of trie node n, outermost first
std::vector<int> path_of(int n)
{
	std::vector<int> p;
	for (; n > 0; n = nodes[n].parent)
		p.push_back(nodes[n].name);
	std::reverse(p.begin(), p.end());
	return p;
}

// the node reached from `base` by the names of node `inner`'s stack from
// depth `from` on; memoized, as the same graft recurs at every call of the
// same nesting (on setup.c's 47 MB line: most of the walk's time otherwise)
struct Graft {
	int base, inner, from;
	bool operator==(const Graft &o) const
	{
		return base == o.base && inner == o.inner && from == o.from;
	}
};
struct GraftHash {
	size_t operator()(const Graft &g) const
	{
		return std::hash<unsigned long long>()(((unsigned long long)(unsigned)g.base << 32) ^
							(unsigned)g.inner ^ ((unsigned long long)g.from << 48));
	}
};
std::unordered_map<Graft, int, GraftHash> grafts;

int graft(int base, int inner, int from)
{
	auto it = grafts.find({base, inner, from});
	if (it != grafts.end())
		return it->second;
	int n = base;
	std::vector<int> p = path_of(inner);
	for (size_t k = (size_t)from; k < p.size(); k++)
		n = child(n, p[k]);
	return grafts[{base, inner, from}] = n;
}

// inclusive bytes per name: each node's own bytes go to every distinct
// name on its stack (a name that recurses through others counts once)
std::vector<unsigned long long> inclusive(const std::unordered_map<int, unsigned long long> &self,
					   size_t n_names)
{
	std::vector<unsigned long long> inc(n_names, 0);
	std::vector<int> seen(n_names, -1);
	for (auto &kv : self) {
		for (int n = kv.first; n > 0; n = nodes[n].parent) {
			int nm = nodes[n].name;
			if (seen[nm] != kv.first) {
				seen[nm] = kv.first;
				inc[nm] += kv.second;
			}
		}
	}
	return inc;
}

} // namespace

#endif
