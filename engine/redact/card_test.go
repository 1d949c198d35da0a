package redact

import "testing"

// TestCardsCodesAndPhrases: payment cards (checked, grouped or named),
// their security codes, backup codes and recovery keys, authenticator
// secrets, recovery phrases found some words after their keyword,
// passphrase-shaped passwords, a password alone on the line after its
// keyword, codes in spaced or dashed digits beside a device or keyword,
// values in a CJK keyword's clause, admin pairs, .pgpass lines, piped
// registry logins, Discord bot tokens, PUKs, a device's number, security
// answers, a password's four kinds of character anywhere, and the
// look-alikes each must leave alone.
// The numbers are made up (a Luhn digit computed, no issued card).
func TestCardsCodesAndPhrases(t *testing.T) {
	found := []struct {
		in      string
		secrets []string
	}{
		{"card 4111 7283 9911 2345 exp 09/28 cvv 417 for the hotel", []string{"4111 7283 9911 2345", "417"}},
		{"Kreditkarte: 5412753499810237, gültig bis 03/27", []string{"5412753499810237"}},
		{"pay with 3741 902586 31040 (amex), CID 7214", []string{"3741 902586 31040", "7214"}},
		{"信用卡 6225 8801 2345 6783 有效期 12/27", []string{"6225 8801 2345 6783"}},
		{"2FA backup codes for my google account: 4821-7730, 9915-2064, 3378-5102", []string{"4821-7730, 9915-2064, 3378-5102"}},
		{"recovery codes (github):\n7f3e9-a1c5b\n2d8e4-f6a0c", []string{"7f3e9-a1c5b\n2d8e4-f6a0c"}},
		{"Backup seed for the test wallet (24 words) — canyon drift elbow ivory maple noble pistol quarter rescue sugar thunder violin",
			[]string{"canyon drift elbow ivory maple noble pistol quarter rescue sugar thunder violin"}},
		{"Wiederherstellungsphrase: apfel ... nein, die richtige: lizard basket summit crater velvet honey plastic merit ocean frame wisdom copper",
			[]string{"lizard basket summit crater velvet honey plastic merit ocean frame wisdom copper"}},
		{"the zip is encrypted, open it with Ostrich-Marmalade-4", []string{"Ostrich-Marmalade-4"}},
		{"moje heslo do banky si nepamatuju, ale do školy je Jablko.Strom9", []string{"Jablko.Strom9"}},
		{"ルーターの管理者ログイン: admin / Kitsune-Ame-3", []string{"Kitsune-Ame-3"}},
		{"PASSWORD\nPurpleMoose#2210", []string{"PurpleMoose#2210"}},
		{"use hunter2024!? to log in to the staging box", []string{"hunter2024!?"}},
		{"vpn user mkraus, pasword Eisvogel*2026", []string{"Eisvogel*2026"}},
		{"curl https://api.telegram.org/bot5920183746:AAFx8Kp2Zm7Rw4Tv1Ln9Jc3Bd6Fh5Gs0Ya2/sendMessage", []string{"5920183746:AAFx8Kp2Zm7Rw4Tv1Ln9Jc3Bd6Fh5Gs0Ya2"}},
		{"garage keypad: 7 3 1 9 then enter", []string{"7 3 1 9"}},
		{"Das Fahrradschloss geht mit 7-3-1-8 auf", []string{"7-3-1-8"}},
		{"自転車の鍵の番号 4-1-7-7、忘れたら教えて", []string{"4-1-7-7"}},
		{"금고 비번 알려줄게 2-7-1-9-0-4", []string{"2-7-1-9-0-4"}},
		{"保险柜密码是 0 7 1 9 3 2，在卧室", []string{"0 7 1 9 3 2"}},
		{"玄関のオートロックの番号：1192＃", []string{"1192＃"}},
		{"Der Türcode fürs Büro ist ab Montag 2580, bitte merken", []string{"2580"}},
		{"kód k trezoru na pokoji jsem nastavil na 0420", []string{"0420"}},
		{"临时密码给你：Tmp#8841xy，明天就失效了", []string{"Tmp#8841xy"}},
		{"支付密码931804，别跟别人说哈", []string{"931804"}},
		{"LINEのパスワード教えとくね、kuma0815mk だよ", []string{"kuma0815mk"}},
		{"게스트 와이파이: SSID Cafe_Guest, 비밀번호 coffee_tto_mani", []string{"coffee_tto_mani"}},
		{"사무실 도어락 번호가 0516에서 7720으로 바뀌었습니다", []string{"0516", "7720"}},
		{"ルーターの管理画面は admin／Yuzu_Ponzu55 で入れます", []string{"Yuzu_Ponzu55"}},
		{"router page 192.168.1.1, user admin, password Vx4kR9mT2q (it was on the sticker)", []string{"Vx4kR9mT2q"}},
		{"~/.pgpass\ndb.internal.example:5432:orders:app_rw:Tm9!vq2Lbx7e", []string{"Tm9!vq2Lbx7e"}},
		{"echo Fj2kq8PzW1nV | docker login -u ci-bot --password-stdin reg.example.io", []string{"Fj2kq8PzW1nV"}},
		{"mysql -u wpadmin -p'Vv8#ksl0Pq!a' wordpress", []string{"Vv8#ksl0Pq!a"}},
		{"client.run('NMeiCwzbV0uZ4ZBP8LrTaNXB.gab8vI.YwuFnCnl1rUxwXKFTumcgVDN_rhpsTrg')", []string{"NMeiCwzbV0uZ4ZBP8LrTaNXB.gab8vI.YwuFnCnl1rUxwXKFTumcgVDN_rhpsTrg"}},
		{"the 2fa setup key is KX4M Q7RZ 2VNA LT6P HW3D Y5GE, can you", []string{"KX4M Q7RZ 2VNA LT6P HW3D Y5GE"}},
		{"Wiederherstellungscode für mein Konto: K7QF-2MZP-9WTA-XR4D-6HNB", []string{"K7QF-2MZP-9WTA-XR4D-6HNB"}},
		{"备用验证码：83920174、55018263、20947718，每个只能用一次", []string{"83920174、55018263、20947718"}},
		{"the password for the shared account is literally \"popcornNight77\" lol", []string{"popcornNight77"}},
		{"note to self: gmail pass is tigerlily2019", []string{"tigerlily2019"}},
		{"mein amazon pw lautet marzipan4ever, nicht lachen", []string{"marzipan4ever"}},
		{"my steam password is my daughter's name and birth year, maisie2014", []string{"maisie2014"}},
		{"SIM PUK is 73820461, the card holder is in the drawer", []string{"73820461"}},
		{"the hotel room safe, I set it to 240981", []string{"240981"}},
		{"Der Tresor im Büro geht mit 196403 auf, merk dir das", []string{"196403"}},
		{"マンションのオートロックの番号 4093、誰にも言わないでね", []string{"4093"}},
		{"wifi at mum's: network BrightonHouse5G, key Kettle!Biscuit42", []string{"Kettle!Biscuit42"}},
		{"我妈家的wifi：名称 TP-LINK_5A3F，密码 19720815ab", []string{"19720815ab"}},
		{"my first pet's name for the bank is Pickles, store that somewhere", []string{"Pickles"}},
		{"Sicherheitsfrage bei der Sparkasse, Name vom ersten Haustier: Flocke", []string{"Flocke"}},
		{"保险的秘密の質問、母の旧姓は「大久保」で登録した", []string{"大久保"}},
		{"银行的密保问题\"第一只宠物叫什么\"，我填的是豆豆", []string{"豆豆"}},
		{"remember this one for the tax portal pls: Trombone#4417xq", []string{"Trombone#4417xq"}},
		{"heslo k routeru sem změnil na rohlik42mlsny", []string{"rohlik42mlsny"}},
		{"do VPN se hlásim jako petr.kral s heslem Pramen-Ledovy-8", []string{"Pramen-Ledovy-8"}},
		{"외장하드 암호문은 \"파란 고래가 밤에 노래해\" 띄어쓰기 포함", []string{"파란 고래가 밤에 노래해"}},
		{"the password is my dog's name. it's Bruno1987", []string{"Bruno1987"}},
		{"パスワードは犬の名前です。つまり Pochi2019 です", []string{"Pochi2019"}},
		{"try Sommer2024!! for the family Netflix", []string{"Sommer2024!!"}},
		{"when it asks, put in hummingbird-Orange-44 and press enter", []string{"hummingbird-Orange-44"}},
		{"type qwerMaus99 when it asks for the router admin password", []string{"qwerMaus99"}},
		{"wifi at the cabin: network \"Birchwood_5G\", pw is mossy-trail-4412", []string{"mossy-trail-4412"}},
		{"cash register manager code: 7730 (don't give it to the weekend staff)", []string{"7730"}},
		{"Tresor im Hinterzimmer: 8-3-5-1-0, erst nach links drehen", []string{"8-3-5-1-0"}},
		{"<password>Qm9!wrT7vh2Lx</password>", []string{"Qm9!wrT7vh2Lx"}},
		{"guest card: WIFI:T:WPA;S:Oakridge-Guest;P:fern-Toast-9921;;", []string{"fern-Toast-9921"}},
		{`"auths": {"reg.example": {"auth": "ZGVwbG95OlF1NG5nLVpob3UjMjAyNg=="}}`, []string{"ZGVwbG95OlF1NG5nLVpob3UjMjAyNg=="}},
		{"MetaMask export (account 2):\nf2c6428bdd23b37f45bb9c34e8b893fe765e9fa942b729bd4351727ee0f3c4d7", []string{"f2c6428bdd23b37f45bb9c34e8b893fe765e9fa942b729bd4351727ee0f3c4d7"}},
		{"Backup of my Ledger:\n1 orbit 2 velvet 3 candle 4 lumber 5 stairs 6 pilot 7 margin 8 humble 9 ostrich 10 frozen 11 vapor 12 dwarf",
			[]string{"orbit 2 velvet 3 candle 4 lumber 5 stairs 6 pilot 7 margin 8 humble 9 ostrich 10 frozen 11 vapor 12 dwarf"}},
		{`Driver d = GraphDatabase.driver(uri, AuthTokens.basic("neo4j", "Lichen-Otter-7741"));`, []string{"Lichen-Otter-7741"}},
		{`server.login("noreply@example.test", "qzvm ltrw bkcp hxye")`, []string{"qzvm ltrw bkcp hxye"}},
		{`ALTER USER hr_app IDENTIFIED BY "Birch_Falcon_5512";`, []string{"Birch_Falcon_5512"}},
		{`sql.Open("mysql", "gopher:Yx2!pLm9Qa@tcp(10.0.3.8:3306)/inventory")`, []string{"Yx2!pLm9Qa"}},
		{`define('AUTH_KEY',         'q7%Lm2V z8R@tP4n|cYb3H]j6sF g1Eu-AoK8x{zT5wR2p');`, []string{"q7%Lm2V z8R@tP4n|cYb3H]j6sF g1Eu-AoK8x{zT5wR2p"}},
		{`app.config["SECRET_KEY"] = "c9e2f7a14b8d3e6f0a5c9b2d7e1f4a8c3b6d9e2f5a8c1b4d"`, []string{"c9e2f7a14b8d3e6f0a5c9b2d7e1f4a8c3b6d9e2f5a8c1b4d"}},
		{"teams hook https://acme.webhook.office.com/webhookb2/3f8a9c2e-7b1d-4e6f-a0c5-9d2b8e4f1a73@6c1e9b3d/IncomingWebhook/b7e4d9a1c3f2",
			[]string{"3f8a9c2e-7b1d-4e6f-a0c5-9d2b8e4f1a73@6c1e9b3d/IncomingWebhook/b7e4d9a1c3f2"}},
	}
	for _, tt := range found {
		fs := Find(tt.in)
		var got []string
		for _, f := range fs {
			got = append(got, tt.in[f.Start:f.End])
		}
		if len(got) != len(tt.secrets) {
			t.Errorf("Find(%q) = %q, want %q", tt.in, got, tt.secrets)
			continue
		}
		for i := range got {
			if got[i] != tt.secrets[i] {
				t.Errorf("Find(%q) = %q, want %q", tt.in, got, tt.secrets)
				break
			}
		}
	}
	for _, in := range []string{
		"order 4111 7283 9911 2346 shipped", // grouped, no card word, fails the check
		"tracking 4111728399112345 arrives Monday",
		"IMEI 490154203237518 on the box",
		"invoice 5412-7534-9981 due 03/27",
		"call 0049 1512 3456 789 after five",
		"I regenerated my backup codes yesterday, all 10 of them",
		"recovery codes are in 1Password",
		"seed the database with the fixtures from staging before running the tests and then check them again",
		"our seed round closed and the next step is hiring",
		"we upgraded to GPT-4o and Wi-Fi-6 routers, login is unchanged",
		"the disk is encrypted with AES-256 and XTS mode",
		"PASSWORD\nrequired",
		"use your fingerprint to log in",
		"use SSO to sign in",
		"my locker combination was 12-34-56 in high school",
		"Kontonummer: DE44 5001 0517 5407 3249 31",
		"Test card for Stripe is 4242 4242 4242 4242 with any CVC",
		"身份验证失败，请检查用户名和密码是否正确（错误码：40103）",
		"비밀번호 관리자는 1Password 써요",
		"login failed for user=jk reason=bad_password attempts=4",
		"The key fingerprint is SHA256:k7Vq2xNb9LmT4wRz1pYc8HdE3sJf6gUa0oKiQnXtMvB",
		"the door code changed in 2019.",
		"admin/admin is the default, change it",
		"密码长度至少8位，需要包含数字",
		"the meeting is at 1 2 3 4 pm",
		"我现在所有密码都放在 1Password 里了",
		"パスワードは全部 1Password で管理してるから大丈夫",
		"the day pass is fine for two",
		"the door is 2000 mm wide and the code panel is new",
		"what is a good security question?",
		"failed to list *v1.Secret: forbidden",
		"upgrade to Node18+ and TypeScript5.4",
		"the safe was installed in 2019, the code is the factory one",
		"the wifi network is called Familie_Berger_5G, the password is on the sticker under the router",
		"カード番号の下4桁は 3317 です",
		"téléphone de la boutique : 04 91 55 23 18, code postal 13001",
		"the terminal printed: Terminal-ID 62418830, Trace-Nr 004213",
		"・パスワードは口頭で伝えます\n・シリアル番号: 2080QAN8821",
		"I'm sure about the master password. File is 2.3 MB, SHA-256 44dbcff0fb4cdff983bf5c2ecbe54beaa23cf2a8d5691b1fbc9fc6937bd57197.",
		"password = getpass.getpass(\"Vault password: \")",
		"api_key = boto3.client(\"secretsmanager\").get_secret_value(SecretId=\"prod/api-key\")",
		".htpasswd line: grafana:$2y$10$Vx9NcYb3Hj6sFg1EuAoQz.4Rt8Lm2Gh4Kq7XzTw5Rp2Lm0QwErTy",
		"db_password: !vault |\n  $ANSIBLE_VAULT;1.1;AES256",
		"ALTER ROLE analytics_ro WITH LOGIN PASSWORD :'ro_password';",
		"please don't use \"password123\"",
		"use Windows11 for gaming",
		"the wifi router model is TPLink-AX3000 and the password is on its label",
		"TXT sel1._domainkey \"v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA1SlTMLwcubchew0HIu9\"",
		"github.com/jackc/pgx/v5 v5.7.1 h1:zRXLj+SlwevmNDiVMlqKpJ5S4GvSEOs76o6KaTEhXys=",
	} {
		if fs := Find(in); len(fs) > 0 {
			t.Errorf("Find(%q) = %s %q, want nothing", in, fs[0].Kind, in[fs[0].Start:fs[0].End])
		}
	}
}

func TestLuhn(t *testing.T) {
	for num, want := range map[string]bool{"79927398713": true, "79927398710": false, "4111111111111111": true, "4111111111111112": false} {
		if luhn(num) != want {
			t.Errorf("luhn(%s) = %v, want %v", num, !want, want)
		}
	}
}
