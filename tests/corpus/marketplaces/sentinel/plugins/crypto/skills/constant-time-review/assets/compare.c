#include <string.h>
#include <stddef.h>

int verify_mac(const unsigned char *mac, const unsigned char *expected_mac, size_t n)
{
    return memcmp(mac, expected_mac, n) == 0;
}

int check_tag(const unsigned char *tag, const unsigned char *expected, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (tag[i] != expected[i])
            return 0;
    }
    return 1;
}

int check_tag_ct(const unsigned char *tag, const unsigned char *expected, size_t n)
{
    unsigned char diff = 0;
    for (size_t i = 0; i < n; i++)
        diff |= tag[i] ^ expected[i];
    return diff == 0;
}

int compare_names(const char *a, const char *b)
{
    return strcmp(a, b);
}
